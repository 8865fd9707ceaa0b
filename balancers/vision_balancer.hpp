#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace deepinfer::balancers {

/// How a vision balancer picks a card.
enum class vision_policy : uint8_t {
  /// DESIGN §6.3: a random machine, then its card with the fewest patches in flight.
  patches,
  /// Every card of every machine in turn, whatever it holds: the baseline the patch rule is
  /// measured against (bench/, `[vision] balancer = "round_robin"`).
  round_robin,
};

/// "patches" | "round_robin".
const char* to_string(vision_policy p);

/// Vision encoder balancer of DESIGN §6.3: a random machine, then on it the card with the fewest
/// patches in flight, where patches = (width / patch) x (height / patch). Under
/// `vision_policy::round_robin` it deals the cards in turn instead (patches still counted).
class vision_balancer {
public:
  struct config {
    int machines = 1;
    int cards_per_machine = 8;
    int patch = 16;       ///< patch edge in pixels
    uint64_t seed = 1;    ///< the machine choice is random but reproducible
    vision_policy policy = vision_policy::patches;
  };

  /// A card chosen for one image.
  struct pick {
    int machine = 0;
    int card = 0;
    int64_t patches = 0;
  };

  explicit vision_balancer(const config& cfg);

  /// Patches of a width x height image (integer division, as the encoder crops).
  static int64_t patches(int64_t width, int64_t height, int patch);

  /// Chooses a card for an image and counts its patches as in flight there.
  pick route(int64_t width, int64_t height);

  /// The image of `p` is encoded: its patches leave the card.
  void done(const pick& p);

  /// Patches in flight on a card.
  int64_t in_flight(int machine, int card) const;

private:
  config cfg_;
  std::mt19937_64 rng_;
  std::vector<int64_t> in_flight_;
  /// The next card of round robin (machine-major).
  std::size_t next_ = 0;
};

} // namespace deepinfer::balancers
