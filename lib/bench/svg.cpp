#include <wm/bench/svg.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace wm::bench {

namespace {

constexpr double kW = 800, kH = 460;
constexpr double kLeft = 80, kRight = 190, kTop = 40, kBottom = 60; // plot area margins
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                               "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// A label for a tick value: 3 significant digits.
std::string tickLabel(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

// "Nice" linear ticks covering [lo, hi].
std::vector<double> niceTicks(double lo, double hi, int want = 5) {
  if (!(hi > lo)) hi = lo + 1;
  double raw = (hi - lo) / want, mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(v);
  return t;
}

struct Frame {
  double x0, x1, y0, y1; // data range
  bool logX;
  double px(double x) const {
    double f =
        logX ? (std::log(x) - std::log(x0)) / (std::log(x1) - std::log(x0)) : (x - x0) / (x1 - x0);
    return kLeft + f * (kW - kLeft - kRight);
  }
  double py(double y) const { return kH - kBottom - (y - y0) / (y1 - y0) * (kH - kTop - kBottom); }
};

void header(std::ostringstream& os, const std::string& title) {
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << kW << "\" height=\""
     << kH << "\" viewBox=\"0 0 " << kW << " " << kH
     << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
     << "<text x=\"" << kW / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
     << xmlEscape(title) << "</text>\n";
}

void axes(std::ostringstream& os, const Frame& f, const std::vector<double>& xt,
          const std::vector<double>& yt, const std::string& xLabel, const std::string& yLabel) {
  double l = kLeft, r = kW - kRight, t = kTop, b = kH - kBottom;
  os << "<g stroke=\"#ddd\">\n";
  for (double y : yt)
    os << "<line x1=\"" << num(l) << "\" x2=\"" << num(r) << "\" y1=\"" << num(f.py(y))
       << "\" y2=\"" << num(f.py(y)) << "\"/>\n";
  for (double x : xt)
    os << "<line x1=\"" << num(f.px(x)) << "\" x2=\"" << num(f.px(x)) << "\" y1=\"" << num(t)
       << "\" y2=\"" << num(b) << "\"/>\n";
  os << "</g>\n<rect x=\"" << l << "\" y=\"" << t << "\" width=\"" << r - l << "\" height=\""
     << b - t << "\" fill=\"none\" stroke=\"black\"/>\n";
  for (double y : yt)
    os << "<text x=\"" << num(l - 6) << "\" y=\"" << num(f.py(y) + 4) << "\" text-anchor=\"end\">"
       << tickLabel(y) << "</text>\n";
  for (double x : xt)
    os << "<text x=\"" << num(f.px(x)) << "\" y=\"" << num(b + 16) << "\" text-anchor=\"middle\">"
       << tickLabel(x) << "</text>\n";
  os << "<text x=\"" << num((l + r) / 2) << "\" y=\"" << num(kH - 18)
     << "\" text-anchor=\"middle\">" << xmlEscape(xLabel) << "</text>\n"
     << "<text transform=\"translate(18," << num((t + b) / 2)
     << ") rotate(-90)\" text-anchor=\"middle\">" << xmlEscape(yLabel) << "</text>\n";
}

void legend(std::ostringstream& os, int i, const std::string& name, const char* color,
            bool dashed) {
  double x = kW - kRight + 14, y = kTop + 10 + 20 * i;
  os << "<line x1=\"" << num(x) << "\" x2=\"" << num(x + 24) << "\" y1=\"" << num(y) << "\" y2=\""
     << num(y) << "\" stroke=\"" << color << "\" stroke-width=\"2\""
     << (dashed ? " stroke-dasharray=\"5,3\"" : "") << "/>\n"
     << "<text x=\"" << num(x + 30) << "\" y=\"" << num(y + 4) << "\">"
     << xmlEscape(name.size() > 22 ? name.substr(0, 21) + "~" : name) << "</text>\n";
}

} // namespace

std::string xmlEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
    case '&': o += "&amp;"; break;
    case '<': o += "&lt;"; break;
    case '>': o += "&gt;"; break;
    case '"': o += "&quot;"; break;
    default:
      // control characters are not allowed in XML 1.0
      if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') o += c;
    }
  }
  return o;
}

std::string renderSvg(const LinePlot& p) {
  std::ostringstream os;
  header(os, p.title);
  const double inf = std::numeric_limits<double>::infinity();
  double x0 = inf, x1 = -inf, y0 = inf, y1 = -inf;
  auto seeY = [&](double y) {
    if (std::isfinite(y)) y0 = std::min(y0, y), y1 = std::max(y1, y);
  };
  for (auto& s : p.series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i]) || (p.logX && s.x[i] <= 0)) continue;
      x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]);
      seeY(s.y[i]);
      if (i < s.lo.size()) seeY(s.lo[i]), seeY(s.hi[i]);
    }
  for (auto& r : p.refs) seeY(r.y);
  if (!(x1 >= x0)) x0 = 1, x1 = 2;
  if (!(y1 >= y0)) y0 = 0, y1 = 1;
  if (x1 == x0) x1 = x0 * 2 + 1;
  double pad = (y1 - y0) * 0.05 + (y1 == y0 ? std::abs(y0) * 0.1 + 1e-9 : 0);
  y0 = std::max(0.0, y0 - pad), y1 += pad;
  std::vector<double> yt = niceTicks(y0, y1), xt;
  if (p.logX) {
    for (double x = std::pow(2, std::floor(std::log2(x0))); x <= x1 * 1.0001; x *= 2)
      if (x >= x0 * 0.9999) xt.push_back(x);
  } else {
    xt = niceTicks(x0, x1);
  }
  Frame f{x0, x1, y0, y1, p.logX};
  axes(os, f, xt, yt, p.xLabel, p.yLabel);
  int li = 0;
  for (size_t si = 0; si < p.series.size(); ++si) {
    auto& s = p.series[si];
    const char* color = kColors[si % 8];
    // band: the polygon hi forward, lo backward (finite points only)
    std::string band;
    for (size_t i = 0; i < s.x.size() && i < s.hi.size(); ++i)
      if (std::isfinite(s.hi[i]) && std::isfinite(s.lo[i]))
        band += num(f.px(s.x[i])) + "," + num(f.py(s.hi[i])) + " ";
    for (size_t i = std::min(s.x.size(), s.lo.size()); i-- > 0;)
      if (std::isfinite(s.hi[i]) && std::isfinite(s.lo[i]))
        band += num(f.px(s.x[i])) + "," + num(f.py(s.lo[i])) + " ";
    if (!band.empty())
      os << "<polygon points=\"" << band << "\" fill=\"" << color
         << "\" fill-opacity=\"0.15\" stroke=\"none\"/>\n";
    std::string pts;
    double prevY = std::numeric_limits<double>::quiet_NaN();
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.y[i]) && (!p.logX || s.x[i] > 0)) {
        if (p.steps && std::isfinite(prevY)) // hold the previous value up to this point
          pts += num(f.px(s.x[i])) + "," + num(f.py(prevY)) + " ";
        pts += num(f.px(s.x[i])) + "," + num(f.py(s.y[i])) + " ";
        prevY = s.y[i];
      }
    if (!pts.empty())
      os << "<polyline points=\"" << pts << "\" fill=\"none\" stroke=\"" << color
         << "\" stroke-width=\"2\"/>\n";
    legend(os, li++, s.name, color, false);
  }
  for (size_t ri = 0; ri < p.refs.size(); ++ri) {
    const char* color = kColors[(p.series.size() + ri) % 8];
    double y = f.py(p.refs[ri].y);
    os << "<line x1=\"" << kLeft << "\" x2=\"" << kW - kRight << "\" y1=\"" << num(y) << "\" y2=\""
       << num(y) << "\" stroke=\"" << color
       << "\" stroke-width=\"1.5\" stroke-dasharray=\"5,3\"/>\n";
    legend(os, li++, p.refs[ri].name, color, true);
  }
  os << "</svg>\n";
  return os.str();
}

std::string renderSvg(const BarChart& c) {
  std::ostringstream os;
  header(os, c.title);
  double y1 = c.refLine;
  for (auto& b : c.bars) y1 = std::max({y1, b.value, b.hi});
  y1 *= 1.1;
  std::vector<double> yt = niceTicks(0, y1);
  if (!yt.empty()) y1 = std::max(y1, yt.back());
  Frame f{0, 1, 0, y1, false};
  axes(os, f, {}, yt, "", c.yLabel);
  double l = kLeft, r = kW - kRight;
  double slot = (r - l) / std::max<size_t>(1, c.bars.size());
  for (size_t i = 0; i < c.bars.size(); ++i) {
    auto& b = c.bars[i];
    double cx = l + slot * (i + 0.5), w = std::min(60.0, slot * 0.6);
    double top = f.py(std::max(0.0, b.value)), base = f.py(0);
    os << "<rect x=\"" << num(cx - w / 2) << "\" y=\"" << num(top) << "\" width=\"" << num(w)
       << "\" height=\"" << num(base - top) << "\" fill=\"" << kColors[i % 8] << "\"/>\n";
    if (b.hi > b.lo)
      os << "<line x1=\"" << num(cx) << "\" x2=\"" << num(cx) << "\" y1=\"" << num(f.py(b.lo))
         << "\" y2=\"" << num(f.py(b.hi)) << "\" stroke=\"black\"/>\n";
    char v[32];
    std::snprintf(v, sizeof v, "%.2f\xc3\x97", b.value); // "x" sign
    os << "<text x=\"" << num(cx) << "\" y=\"" << num(top - 5) << "\" text-anchor=\"middle\">" << v
       << "</text>\n"
       << "<text x=\"" << num(cx) << "\" y=\"" << num(kH - kBottom + 16)
       << "\" text-anchor=\"middle\">" << xmlEscape(b.name) << "</text>\n";
  }
  if (c.refLine > 0)
    os << "<line x1=\"" << l << "\" x2=\"" << r << "\" y1=\"" << num(f.py(c.refLine)) << "\" y2=\""
       << num(f.py(c.refLine)) << "\" stroke=\"black\" stroke-dasharray=\"5,3\"/>\n";
  os << "</svg>\n";
  return os.str();
}

} // namespace wm::bench
