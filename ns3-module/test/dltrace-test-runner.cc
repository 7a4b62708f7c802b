// SPDX-License-Identifier: GPL-2.0-only
// Runs the dltrace module's TestSuite with ns-3's TestRunner against an
// installed ns-3 (inside an ns-3 tree, ./test.py and test-runner do this).
#include "ns3/test.h"

int
main(int argc, char* argv[])
{
    return ns3::TestRunner::Run(argc, argv);
}
