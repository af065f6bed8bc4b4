// SVG plots written by wmtune itself (no plotting dependency): a line plot with optional min-max
// bands and horizontal reference lines, and a bar chart. Standalone SVG 1.1 documents.
#pragma once

#include <string>
#include <vector>

namespace wm::bench {

struct Series {
  std::string name;
  std::vector<double> x, y;   // y: NaN or infinite points are gaps
  std::vector<double> lo, hi; // optional band, same length as x
};

struct RefLine {
  std::string name;
  double y = 0;
};

struct LinePlot {
  std::string title, xLabel, yLabel;
  bool logX = false;
  bool steps = false; // a step function (best so far): each value holds until the next point
  std::vector<Series> series;
  std::vector<RefLine> refs;
};

struct Bar {
  std::string name;
  double value = 0, lo = 0, hi = 0; // lo/hi: whisker (equal to value: none)
};

struct BarChart {
  std::string title, yLabel;
  std::vector<Bar> bars;
  double refLine = 1.0; // drawn as a dashed line (0: none)
};

std::string renderSvg(const LinePlot& p);
std::string renderSvg(const BarChart& c);

/// Text with &, <, >, " escaped for XML.
std::string xmlEscape(const std::string& s);

} // namespace wm::bench
