#include "balancers/sim/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace deepinfer::balancers::sim {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

const char* const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

} // namespace

std::string svg_chart::render() const {
  const double left = 70, right = 20, top = 30, bottom = 45;
  const double w = cfg_.width - left - right;
  const double h = cfg_.height - top - bottom;
  double x0 = std::numeric_limits<double>::max(), x1 = -x0, y0 = 0.0, y1 = -x0;
  for (const auto& s : series_)
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i]))
        continue;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, s.y[i]);
      y1 = std::max(y1, s.y[i]);
    }
  if (x1 <= x0)
    x1 = x0 + 1.0;
  if (y1 <= y0)
    y1 = y0 + 1.0;
  std::string out = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(cfg_.width) + "' height='" +
                    std::to_string(cfg_.height) + "' font-family='sans-serif' font-size='11'>\n";
  out += "<rect width='100%' height='100%' fill='white'/>\n";
  out += "<text x='" + num(cfg_.width / 2.0) + "' y='18' text-anchor='middle' font-size='13'>" + cfg_.title + "</text>\n";
  out += "<rect x='" + num(left) + "' y='" + num(top) + "' width='" + num(w) + "' height='" + num(h) +
         "' fill='none' stroke='#444'/>\n";
  // axis bounds and labels
  out += "<text x='" + num(left) + "' y='" + num(top + h + 14) + "' text-anchor='middle'>" + num(x0) + "</text>\n";
  out += "<text x='" + num(left + w) + "' y='" + num(top + h + 14) + "' text-anchor='middle'>" + num(x1) + "</text>\n";
  out += "<text x='" + num(left + w / 2) + "' y='" + num(top + h + 32) + "' text-anchor='middle'>" + cfg_.x_label + "</text>\n";
  out += "<text x='" + num(left - 4) + "' y='" + num(top + h) + "' text-anchor='end'>" + num(y0) + "</text>\n";
  out += "<text x='" + num(left - 4) + "' y='" + num(top + 8) + "' text-anchor='end'>" + num(y1) + "</text>\n";
  out += "<text transform='translate(14," + num(top + h / 2) + ") rotate(-90)' text-anchor='middle'>" + cfg_.y_label + "</text>\n";
  for (size_t k = 0; k < series_.size(); ++k) {
    const auto& s = series_[k];
    const char* color = palette[k % (sizeof palette / sizeof palette[0])];
    const size_t n = s.x.size();
    const size_t stride = std::max<size_t>(1, (n + cfg_.max_points - 1) / cfg_.max_points);
    out += "<polyline fill='none' stroke-width='1.5' stroke='" + std::string(color) + "' points='";
    for (size_t i = 0; i < n; i += stride) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i]))
        continue;
      out += num(left + (s.x[i] - x0) / (x1 - x0) * w) + "," + num(top + h - (s.y[i] - y0) / (y1 - y0) * h) + " ";
    }
    out += "'/>\n";
    out += "<text x='" + num(left + 8) + "' y='" + num(top + 14 + 13.0 * static_cast<double>(k)) + "' fill='" + color + "'>" +
           s.name + "</text>\n";
  }
  out += "</svg>\n";
  return out;
}

} // namespace deepinfer::balancers::sim
