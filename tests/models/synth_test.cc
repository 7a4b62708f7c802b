// SPDX-License-Identifier: GPL-2.0-only
// Synthetic workloads: model sizes, DDP buckets summing to the gradient, and
// trace sets that merge and lower like recorded ones.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <numeric>

#include "dltrace/formats/trace_set.h"
#include "dltrace/models/lower.h"
#include "dltrace/models/merge.h"
#include "dltrace/models/synth.h"

namespace dltrace::models {
namespace {

uint64_t Sum(const std::vector<uint64_t>& v) { return std::accumulate(v.begin(), v.end(), 0ull); }

TEST(Synth, ModelParameterCountsMatchThePublishedSizes) {
  EXPECT_EQ(Sum(ModelParameters("resnet50")), 25'557'032u);
  EXPECT_EQ(Sum(ModelParameters("resnet152")), 60'192'808u);
  EXPECT_EQ(Sum(ModelParameters("bert-large")), 335'141'888u);
  EXPECT_EQ(Sum(ModelParameters("gpt2-xl")), 1'557'611'200u);
  EXPECT_TRUE(ModelParameters("alexnet").empty());
}

TEST(Synth, BucketsSumToTheGradientAndRespectTheCap) {
  for (const auto& m : AllModels()) {
    auto params = ModelParameters(m.name);
    for (uint64_t elem : {4u, 2u}) {
      auto buckets = GradientBuckets(params, elem, 25ull << 20);
      EXPECT_EQ(Sum(buckets), Sum(params) * elem) << m.name;
      // Every bucket but the last reached the cap; a bucket exceeds it by at
      // most its last tensor.
      uint64_t largest = *std::max_element(params.begin(), params.end()) * elem;
      for (size_t b = 0; b + 1 < buckets.size(); ++b) {
        EXPECT_GE(buckets[b], 25ull << 20);
        EXPECT_LT(buckets[b], (25ull << 20) + largest);
      }
    }
  }
  // ResNet-50 in fp32 is 102.2 MB of gradient: 4 full 25 MiB buckets and a rest.
  auto r50 = GradientBuckets(ModelParameters("resnet50"), 4, 25ull << 20);
  EXPECT_EQ(r50.size(), 4u);
}

TEST(Synth, BucketsGoInReverseLayerOrder) {
  // The classifier (last layer) is in the first bucket.
  auto buckets = GradientBuckets({10, 20, 30}, 1, 25);
  EXPECT_EQ(buckets, (std::vector<uint64_t>{30, 30}));
}

TEST(Synth, OptionsAreChecked) {
  SynthOptions o;
  EXPECT_EQ(CheckSynthOptions(o), "");
  o.model = "alexnet";
  EXPECT_NE(CheckSynthOptions(o).find("unknown model"), std::string::npos);
  o = SynthOptions{};
  o.dtype = "fp8";
  EXPECT_NE(CheckSynthOptions(o), "");
}

TEST(Synth, WritesATraceSetThatMergesAndLowers) {
  char tmpl[] = "/tmp/dltrace-synth-XXXXXX";
  std::string dir = std::string(::mkdtemp(tmpl)) + "/set";
  SynthOptions o;
  o.model = "resnet50";
  o.ranks = 6;
  o.ranks_per_host = 4;
  o.iterations = 3;
  o.dtype = "bf16";
  std::string err;
  ASSERT_TRUE(WriteSynthTraceSet(o, dir, &err)) << err;
  EXPECT_FALSE(WriteSynthTraceSet(o, dir, &err));  // never overwrites
  EXPECT_NE(err.find("cannot create"), std::string::npos);
  formats::TraceSet set;
  ASSERT_TRUE(formats::LoadTraceSet(dir, &set, &err)) << err;
  EXPECT_TRUE(set.warnings.empty());
  ASSERT_EQ(set.ranks.size(), 6u);
  auto buckets = GradientBuckets(ModelParameters("resnet50"), 2, 25ull << 20);
  uint64_t per_iteration = 0;
  for (const auto& op : set.ranks[0].ops) per_iteration += op.bytes;
  EXPECT_EQ(per_iteration, 3 * 25'557'032ull * 2);
  EXPECT_EQ(set.ranks[0].ops.size(), 3 * buckets.size());
  EXPECT_EQ(set.ranks[5].header.host, "node1");
  MergedTrace m = Merge(set);
  EXPECT_TRUE(m.problems.empty()) << m.problems.front();
  EXPECT_EQ(m.hosts.size(), 2u);
  LowerOptions lo;
  lo.algorithm = "ring";
  Schedule s = LowerTrace(m, lo, nullptr);
  EXPECT_TRUE(CheckSchedule(s).empty());
  EXPECT_EQ(s.iterations, 3);
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

}  // namespace
}  // namespace dltrace::models
