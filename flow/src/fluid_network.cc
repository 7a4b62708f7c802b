// SPDX-License-Identifier: GPL-2.0-only
// FluidNetwork: events in simulated seconds, flows sharing links by weighted
// max-min, re-solved only where something changed (fluid_network.h).
#include "dltrace/flow/fluid_network.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace dltrace::flow {

namespace {

// Events this close to an instant run at it (SimGrid's surf/precision).
constexpr double kTimeEpsilon = 1e-9;
// Relative tolerance on levels and on a link's saturation.
constexpr double kLevelEpsilon = 1e-9;

}  // namespace

FluidNetwork::FluidNetwork(std::vector<double> bandwidth, std::vector<double> latency, FluidParams params)
    : params_(params) {
  links_.resize(bandwidth.size());
  given_links_ = links_.size();
  for (size_t l = 0; l < links_.size(); ++l) {
    links_[l].capacity = bandwidth[l];
    links_[l].latency = l < latency.size() ? latency[l] : 0;
  }
  member_capacity_ = bandwidth;
}

uint32_t FluidNetwork::AddSprayRoute(const std::vector<std::vector<uint32_t>>& stages) {
  if (aggregate_of_link_.empty()) {
    aggregate_of_link_.assign(given_links_, kNone);
    used_alone_.assign(given_links_, false);
  }
  std::vector<uint32_t> links;
  for (std::vector<uint32_t> stage : stages) {
    if (stage.size() == 1) {
      if (aggregate_of_link_[stage[0]] != kNone) return kNone;
      used_alone_[stage[0]] = true;
      links.push_back(stage[0]);
      continue;
    }
    std::sort(stage.begin(), stage.end());
    auto [it, fresh] = aggregate_of_set_.try_emplace(stage, uint32_t(links_.size()));
    if (fresh) {
      Link aggregate;
      for (uint32_t l : stage) {
        if (aggregate_of_link_[l] != kNone || used_alone_[l]) return kNone;
        aggregate_of_link_[l] = it->second;
        aggregate.capacity += links_[l].capacity;
        aggregate.latency = std::max(aggregate.latency, links_[l].latency);
      }
      links_.push_back(std::move(aggregate));
      member_capacity_.push_back(links_[stage[0]].capacity);
    }
    links.push_back(it->second);
  }
  return AddRoute(links);
}

uint32_t FluidNetwork::AddRoute(const std::vector<uint32_t>& links) {
  Route r;
  r.first = uint32_t(route_links_.size());
  r.size = uint32_t(links.size());
  route_links_.insert(route_links_.end(), links.begin(), links.end());
  route_open_.emplace_back();
  double weight_s = 0;
  r.bound = std::numeric_limits<double>::infinity();
  for (uint32_t l : links) {
    r.latency += links_[l].latency;
    if (params_.weight_s > 0) weight_s += params_.weight_s / member_capacity_[l];  // a path's, not an aggregate's
    r.bound = std::min(r.bound, links_[l].capacity);
  }
  // SimGrid gives a flow its penalty as the latency is paid; one without
  // latency shares from its start with penalty 1.
  r.penalty = params_.equal_shares ? 1.0 : r.latency > 0 ? r.latency + weight_s : 1.0;
  if (r.latency > 0 && params_.tcp_gamma > 0) r.bound = std::min(r.bound, params_.tcp_gamma / (2 * r.latency));
  routes_.push_back(std::move(r));
  return uint32_t(routes_.size() - 1);
}

void FluidNetwork::Push(double t, EventKind kind, uint32_t id, uint32_t version) {
  events_.push({std::max(t, now_), seq_++, id, version, kind});
}

void FluidNetwork::At(double t, Callback cb) {
  uint32_t id;
  if (free_callbacks_.empty()) {
    id = uint32_t(callbacks_.size());
    callbacks_.push_back(std::move(cb));
  } else {
    id = free_callbacks_.back();
    free_callbacks_.pop_back();
    callbacks_[id] = std::move(cb);
  }
  Push(t, EventKind::kCallback, id);
}

uint32_t FluidNetwork::NewFlow() {
  if (!free_flows_.empty()) {
    const uint32_t f = free_flows_.back();
    free_flows_.pop_back();
    return f;
  }
  flows_.emplace_back();
  return uint32_t(flows_.size() - 1);
}

void FluidNetwork::StartFlow(uint32_t route, double bytes, Callback done, bool coalesce, double overlap) {
  ++flows_started_;
  const double ready = now_ + std::max(0.0, routes_[route].latency * params_.latency_factor - overlap);
  std::vector<std::pair<double, uint32_t>>& open = route_open_[route];
  if (coalesce) {
    // The latest flow of these bytes started on ROUTE at this instant, if it can still be joined.
    for (auto it = open.rbegin(); it != open.rend(); ++it) {
      if (it->first != bytes) continue;
      Flow& f = flows_[it->second];
      if (!f.active && f.start == now_ && f.ready == ready && f.route == route && f.bytes == bytes && f.done) {
        ++f.count;
        f.remaining += bytes;
        f.more_done.push_back(std::move(done));
        ++flows_joined_;
        return;
      }
      break;
    }
  }
  const uint32_t id = NewFlow();
  Flow& f = flows_[id];
  f.route = route;
  f.count = 1;
  f.bytes = bytes;
  f.remaining = bytes;
  f.start = f.at = now_;
  f.ready = ready;
  f.x = f.level = 0;
  f.penalty = routes_[route].penalty;
  f.bottleneck = kNone;
  f.active = false;
  f.done = std::move(done);
  f.more_done.clear();
  ++f.version;
  if (coalesce) {
    if (open.empty()) open_routes_.push_back(route);
    open.emplace_back(bytes, id);
  }
  Push(ready, EventKind::kLatencyPaid, id, f.version);
}

double FluidNetwork::NextTime() const {
  return events_.empty() ? std::numeric_limits<double>::infinity() : events_.top().time;
}

void FluidNetwork::AdvanceTo(double t) {
  if (t <= now_) return;
  now_ = t;
  for (uint32_t r : open_routes_) route_open_[r].clear();
  open_routes_.clear();
}

bool FluidNetwork::Step() {
  if (events_.empty()) return false;
  AdvanceTo(events_.top().time);
  const double until = now_ + kTimeEpsilon;
  while (!events_.empty() && events_.top().time <= until) {
    const Event ev = events_.top();
    events_.pop();
    switch (ev.kind) {
      case EventKind::kCallback: {
        Callback cb = std::move(callbacks_[ev.id]);
        callbacks_[ev.id] = nullptr;
        free_callbacks_.push_back(ev.id);
        cb();
        break;
      }
      case EventKind::kLatencyPaid:
        if (flows_[ev.id].version == ev.version) Activate(ev.id);
        break;
      case EventKind::kComplete:
        if (flows_[ev.id].version == ev.version && flows_[ev.id].active) Finish(ev.id);
        break;
    }
  }
  if (!changed_links_.empty()) Solve();
  return true;
}

void FluidNetwork::Activate(uint32_t f) {
  Flow& fl = flows_[f];
  if (fl.remaining <= 0) {  // nothing to send: done once the latency is paid
    Finish(f);
    return;
  }
  fl.active = true;
  fl.at = now_;
  fl.x = fl.level = 0;
  fl.bottleneck = kNone;
  ++active_count_;
  for (uint32_t l : LinksOf(fl.route)) {
    links_[l].flows.push_back(f);
    changed_links_.push_back(l);
  }
}

void FluidNetwork::Finish(uint32_t f) {
  Flow& fl = flows_[f];
  if (fl.active) {
    for (uint32_t l : LinksOf(fl.route)) {
      Link& link = links_[l];
      SettleLink(l);
      link.used -= double(fl.count) * fl.x;
      const auto at = std::find(link.flows.begin(), link.flows.end(), f);
      *at = link.flows.back();
      link.flows.pop_back();
      if (link.flows.empty()) link.used = 0;  // no rounding left behind
      changed_links_.push_back(l);
    }
    fl.active = false;
    --active_count_;
  }
  ++fl.version;
  Callback first = std::move(fl.done);
  fl.done = nullptr;
  std::vector<Callback> more;
  if (!fl.more_done.empty()) more.swap(fl.more_done);
  free_flows_.push_back(f);  // the callbacks may start flows that reuse it
  first();
  for (Callback& cb : more) cb();
}

double FluidNetwork::BytesNow(const Link& link) const {
  return link.bytes + link.used * params_.bandwidth_factor * (now_ - link.at);
}

void FluidNetwork::SettleLink(uint32_t l) {
  Link& link = links_[l];
  link.bytes = BytesNow(link);
  link.at = now_;
}

std::vector<double> FluidNetwork::LinkBytes() const {
  std::vector<double> bytes(given_links_);
  for (size_t l = 0; l < given_links_; ++l) bytes[l] = BytesNow(links_[l]);
  for (const auto& [members, aggregate] : aggregate_of_set_)
    for (uint32_t l : members) bytes[l] += BytesNow(links_[aggregate]) / double(members.size());
  return bytes;
}

void FluidNetwork::AddToS(uint32_t f) {
  Flow& fl = flows_[f];
  fl.in_s = stamp_;
  s_.push_back(f);
  old_x_.push_back(fl.x);
  for (uint32_t l : LinksOf(fl.route)) {
    Link& link = links_[l];
    if (link.mark == stamp_) continue;
    link.mark = stamp_;
    SettleLink(l);  // before any value on it changes
    t_.push_back(l);
  }
}

void FluidNetwork::Solve() {
  ++solves_;
  ++stamp_;
  s_.clear();
  t_.clear();
  old_x_.clear();
  // Seed: the flows that started sharing, and those whose bottleneck is a
  // link where a flow started or stopped. Verify adds whatever else moves.
  for (uint32_t l : changed_links_)
    for (uint32_t f : links_[l].flows) {
      const Flow& fl = flows_[f];
      if (fl.in_s != stamp_ && (fl.bottleneck == kNone || fl.bottleneck == l)) AddToS(f);
    }
  // A link that lost its last flow still settles its byte count.
  for (uint32_t l : changed_links_)
    if (links_[l].mark != stamp_) {
      links_[l].mark = stamp_;
      SettleLink(l);
      t_.push_back(l);
    }
  changed_links_.clear();
  do Fill();
  while (Verify());
  flows_resolved_ += s_.size();
  for (size_t i = 0; i < s_.size(); ++i) Reschedule(s_[i], old_x_[i]);
  for (uint32_t l : t_) {
    Link& link = links_[l];
    link.used = 0;
    for (uint32_t f : link.flows) link.used += double(flows_[f].count) * flows_[f].x;
  }
}

void FluidNetwork::Fill() {
  // Min-heaps, as std::priority_queue<FillEntry, vector, greater> keeps them (same order of ties).
  const std::greater<FillEntry> after;
  saturate_.clear();
  bounded_.clear();
  auto push = [&after](std::vector<FillEntry>& heap, FillEntry e) {
    heap.push_back(e);
    std::push_heap(heap.begin(), heap.end(), after);
  };
  auto pop = [&after](std::vector<FillEntry>& heap) {
    std::pop_heap(heap.begin(), heap.end(), after);
    heap.pop_back();
  };
  for (uint32_t l : t_) {
    Link& link = links_[l];
    link.residual = link.capacity;
    link.weight = 0;
    link.unfrozen = 0;
    link.min_frozen_level = std::numeric_limits<double>::infinity();
    for (uint32_t f : link.flows) {
      const Flow& fl = flows_[f];
      if (fl.in_s == stamp_) {
        link.weight += double(fl.count) / fl.penalty;
        ++link.unfrozen;
      } else {
        link.residual -= double(fl.count) * fl.x;
      }
    }
    link.residual = std::max(0.0, link.residual);
  }
  for (uint32_t f : s_) {
    Flow& fl = flows_[f];
    fl.frozen = false;
    const Route& r = routes_[fl.route];
    push(bounded_, {r.bound * r.penalty, f, 0});
  }
  auto push_link = [&](uint32_t l) {
    Link& link = links_[l];
    ++link.stamp;
    if (link.unfrozen > 0) push(saturate_, {link.residual / link.weight, l, link.stamp});
  };
  for (uint32_t l : t_) push_link(l);
  auto freeze = [&](uint32_t f, double x, double level, uint32_t bottleneck) {
    Flow& fl = flows_[f];
    fl.frozen = true;
    fl.x = x;
    fl.level = level;
    fl.bottleneck = bottleneck;
    const double k = double(fl.count), w = k / fl.penalty;
    for (uint32_t m : LinksOf(fl.route)) {
      Link& link = links_[m];
      link.residual = std::max(0.0, link.residual - k * x);
      link.weight = --link.unfrozen > 0 ? std::max(0.0, link.weight - w) : 0;
      if (m != bottleneck) push_link(m);
    }
  };
  size_t left = s_.size();
  double level = 0;  // rises monotonically
  while (left > 0) {
    while (!saturate_.empty() && saturate_.front().stamp != links_[saturate_.front().id].stamp) pop(saturate_);
    while (!bounded_.empty() && flows_[bounded_.front().id].frozen) pop(bounded_);
    const double link_level = saturate_.empty() ? std::numeric_limits<double>::infinity() : saturate_.front().level;
    if (!bounded_.empty() && bounded_.front().level < link_level) {
      const uint32_t f = bounded_.front().id;
      pop(bounded_);
      level = std::max(level, routes_[flows_[f].route].bound * routes_[flows_[f].route].penalty);
      freeze(f, routes_[flows_[f].route].bound, level, kBoundBottleneck);
      --left;
      continue;
    }
    if (saturate_.empty()) break;  // cannot happen: every flow left crosses a link with unfrozen flows
    const uint32_t l = saturate_.front().id;
    pop(saturate_);
    level = std::max(level, link_level);
    Link& link = links_[l];
    link.min_frozen_level = level;
    ++link.stamp;  // its entry is spent
    for (uint32_t f : link.flows) {
      Flow& fl = flows_[f];
      if (fl.in_s != stamp_ || fl.frozen) continue;
      freeze(f, level / fl.penalty, level, l);
      --left;
    }
  }
}

bool FluidNetwork::Verify() {
  bool added = false;
  const size_t links = t_.size();  // AddToS appends; those are checked after the next fill
  for (size_t i = 0; i < links; ++i) {
    const uint32_t l = t_[i];
    const Link& link = links_[l];
    double used = 0, max_level = 0;
    for (uint32_t f : link.flows) {
      used += double(flows_[f].count) * flows_[f].x;
      max_level = std::max(max_level, flows_[f].level);
    }
    const bool saturated = used >= link.capacity * (1 - kLevelEpsilon);
    for (size_t j = 0; j < link.flows.size(); ++j) {
      const uint32_t g = link.flows[j];
      const Flow& fl = flows_[g];
      if (fl.in_s == stamp_) continue;
      // Its bottleneck here no longer holds it (capacity came free, or a
      // flow now has a higher level here), or a flow re-solved here froze at
      // a lower level than its own: it moves too.
      const bool lost = fl.bottleneck == l && (!saturated || fl.level < max_level * (1 - kLevelEpsilon));
      const bool above = fl.level > link.min_frozen_level * (1 + kLevelEpsilon);
      if (lost || above) {
        AddToS(g);
        added = true;
      }
    }
  }
  return added;
}

void FluidNetwork::Reschedule(uint32_t f, double old_x) {
  Flow& fl = flows_[f];
  const double rate_factor = double(fl.count) * params_.bandwidth_factor;
  fl.remaining = std::max(0.0, fl.remaining - rate_factor * old_x * (now_ - fl.at));
  fl.at = now_;
  if (old_x > 0 && std::abs(fl.x - old_x) <= kLevelEpsilon * old_x) {
    fl.x = old_x;  // unchanged: its completion event stands
    return;
  }
  ++rate_changes_;
  ++fl.version;
  if (fl.x > 0) Push(now_ + fl.remaining / (rate_factor * fl.x), EventKind::kComplete, f, fl.version);
}

}  // namespace dltrace::flow
