#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "actors/control/live_instances.hpp"
#include "actors/messages.hpp"
#include "balancers/serving_router.hpp"

namespace deepinfer::actors {

/// The running instances of one role as both a balancer's router (shapes) and its grants
/// (handles) need them.
class balancer_view {
public:
  /// Takes the view's running instances of `role`.
  void update(const membership_view& view, node_role role);

  /// The shapes to hand to `serving_router::set_*_instances`.
  const std::vector<balancers::serving_router::instance_shape>& shapes() const { return shapes_; }

  /// A grant for (instance, rank) with its handle; nullopt when that rank is not in the view.
  std::optional<rank_grant> grant(const balancers::serving_router::rank_ref& where) const;

  bool empty() const { return live_.empty(); }

private:
  std::vector<live_instance> live_;
  std::vector<balancers::serving_router::instance_shape> shapes_;
};

} // namespace deepinfer::actors
