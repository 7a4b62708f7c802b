// SPDX-License-Identifier: GPL-2.0-only
// DltraceAttributes: GetTypeId()'s chain with one typed call per attribute
// that a data member holds (the value, accessor and checker of its type).
#ifndef DLTRACE_ATTRIBUTES_H
#define DLTRACE_ATTRIBUTES_H

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/nstime.h"
#include "ns3/string.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/type-id.h"
#include "ns3/uinteger.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief The TypeId of class C while GetTypeId() adds its attributes.
 *
 * AddDouble(name, help, initial, &C::m_x, min, max) is
 * TypeId::AddAttribute(name, help, DoubleValue(initial),
 * MakeDoubleAccessor(&C::m_x), MakeDoubleChecker<double>(min, max)), and
 * likewise for Time, Uinteger (the checker of the member's own type),
 * Boolean and String: the value type is named once instead of three times.
 * Attributes with a setter, an enum or a pointer use AddAttribute as on a
 * TypeId. AddTraceSource(name, help, &C::m_x, callback) is
 * TypeId::AddTraceSource with MakeTraceSourceAccessor(&C::m_x). Converts to
 * the TypeId.
 *
 * An attribute's initial value here is its only default: CreateObject and
 * ObjectFactory::Create set every attribute (Config::SetDefault included)
 * after the C++ constructor (ObjectBase::ConstructSelf), so the member
 * itself gets only a neutral in-class initialiser ({0}, {false}, {}).
 */
template <class C>
class DltraceAttributes
{
  public:
    explicit DltraceAttributes(TypeId tid)
        : m_tid(tid)
    {
    }

    DltraceAttributes& AddDouble(const std::string& name, const std::string& help, double initial,
                                 double C::*member,
                                 double min = -std::numeric_limits<double>::max(),
                                 double max = std::numeric_limits<double>::max())
    {
        m_tid.AddAttribute(name, help, DoubleValue(initial),
                           MakeDoubleAccessor(member), MakeDoubleChecker<double>(min, max));
        return *this;
    }

    DltraceAttributes& AddTime(const std::string& name, const std::string& help, Time initial,
                               Time C::*member, Time min = Time::Min())
    {
        m_tid.AddAttribute(name, help, TimeValue(initial),
                           MakeTimeAccessor(member), MakeTimeChecker(min));
        return *this;
    }

    /// U, the member's unsigned type, is the checker's: its range by default.
    template <class U>
    DltraceAttributes& AddUinteger(const std::string& name, const std::string& help,
                                   uint64_t initial, U C::*member, uint64_t min = 0,
                                   uint64_t max = std::numeric_limits<U>::max())
    {
        m_tid.AddAttribute(name, help, UintegerValue(initial),
                           MakeUintegerAccessor(member), MakeUintegerChecker<U>(min, max));
        return *this;
    }

    DltraceAttributes& AddBoolean(const std::string& name, const std::string& help, bool initial,
                                  bool C::*member)
    {
        m_tid.AddAttribute(name, help, BooleanValue(initial),
                           MakeBooleanAccessor(member), MakeBooleanChecker());
        return *this;
    }

    DltraceAttributes& AddString(const std::string& name, const std::string& help,
                                 const std::string& initial, std::string C::*member)
    {
        m_tid.AddAttribute(name, help, StringValue(initial),
                           MakeStringAccessor(member), MakeStringChecker());
        return *this;
    }

    /// TypeId::AddAttribute, for the attributes the typed calls above do not cover.
    template <class... Args>
    DltraceAttributes& AddAttribute(Args&&... args)
    {
        m_tid.AddAttribute(std::forward<Args>(args)...);
        return *this;
    }

    /// TypeId::AddTraceSource(name, help, MakeTraceSourceAccessor(source), callback).
    template <class T>
    DltraceAttributes& AddTraceSource(const std::string& name, const std::string& help,
                                      T C::*source, const std::string& callback)
    {
        m_tid.AddTraceSource(name, help, MakeTraceSourceAccessor(source), callback);
        return *this;
    }

    operator TypeId() const
    {
        return m_tid;
    }

  private:
    TypeId m_tid;
};

/**
 * \ingroup dltrace
 * TypeId(NAME).SetParent<P>().SetGroupName("Dltrace").AddConstructor<C>(),
 * the start of every dltrace class's GetTypeId().
 */
template <class C, class P>
DltraceAttributes<C>
DltraceTypeId(const std::string& name)
{
    return DltraceAttributes<C>(
        TypeId(name).SetParent<P>().SetGroupName("Dltrace").template AddConstructor<C>());
}

} // namespace ns3

#endif /* DLTRACE_ATTRIBUTES_H */
