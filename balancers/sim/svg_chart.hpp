#pragma once

#include <string>
#include <vector>

namespace deepinfer::balancers::sim {

/// A minimal SVG line chart (no plotting library): axes with min/max labels, one polyline per
/// series, a legend. Series are downsampled to at most `max_points` so committed plots stay small.
class svg_chart {
public:
  struct series {
    std::string name;
    std::vector<double> x;
    std::vector<double> y;
  };
  struct config {
    std::string title;
    std::string x_label;
    std::string y_label;
    int width = 640;
    int height = 360;
    size_t max_points = 400;
  };

  explicit svg_chart(const config& cfg) : cfg_(cfg) {}

  /// Adds a series (x and y of equal length).
  void add(series s) { series_.push_back(std::move(s)); }

  /// The SVG document.
  std::string render() const;

private:
  config cfg_;
  std::vector<series> series_;
};

} // namespace deepinfer::balancers::sim
