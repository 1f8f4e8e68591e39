// The SVG writer declared in cdplab/svg.h.
#include "cdplab/svg.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cdplab {
namespace {

/// Numbers with enough digits for a picture, without exponents for ordinary sizes.
std::string number(double value) {
  std::ostringstream out;
  out.precision(6);
  out << value;
  return out.str();
}

/// Escapes the characters XML gives a meaning to, in text and in attribute values.
std::string escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string style_attributes(const SvgStyle& style) {
  std::string out = " stroke=\"" + escaped(style.stroke) + "\" stroke-width=\"" + number(style.stroke_width) +
                    "\" fill=\"" + escaped(style.fill) + "\"";
  if (style.opacity < 1.0) out += " opacity=\"" + number(style.opacity) + "\"";
  return out;
}

}  // namespace

SvgStyle SvgStyle::stroked(const std::string& colour, double width) {
  SvgStyle style;
  style.stroke = colour;
  style.stroke_width = width;
  return style;
}

SvgStyle SvgStyle::filled(const std::string& colour) {
  SvgStyle style;
  style.fill = colour;
  return style;
}

Svg::Svg(SvgBox view_box, int width_px, int height_px)
    : view_box_(view_box), width_px_(width_px), height_px_(height_px) {
  if (!(view_box.width > 0.0) || !(view_box.height > 0.0)) {
    throw std::invalid_argument("Svg: the view box must have a positive width and height");
  }
  if (width_px <= 0 || height_px <= 0) throw std::invalid_argument("Svg: the image size must be positive");
}

void Svg::polyline(const std::vector<SvgPoint>& points, const SvgStyle& style) {
  if (points.size() < 2) return;
  body_ += "<polyline points=\"";
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i > 0) body_ += ' ';
    body_ += number(points[i].x) + "," + number(points[i].y);
  }
  // Round joins keep sharp corners of thick lines from sticking out.
  body_ += "\"" + style_attributes(style) + " stroke-linejoin=\"round\"/>\n";
}

void Svg::circle(SvgPoint centre, double radius, const SvgStyle& style) {
  body_ += "<circle cx=\"" + number(centre.x) + "\" cy=\"" + number(centre.y) + "\" r=\"" + number(radius) + "\"" +
           style_attributes(style) + "/>\n";
}

void Svg::rect(SvgBox box, const SvgStyle& style) {
  body_ += "<rect x=\"" + number(box.x) + "\" y=\"" + number(box.y) + "\" width=\"" + number(box.width) +
           "\" height=\"" + number(box.height) + "\"" + style_attributes(style) + "/>\n";
}

void Svg::text(SvgPoint baseline_start, const std::string& content, double size, const std::string& colour) {
  body_ += "<text x=\"" + number(baseline_start.x) + "\" y=\"" + number(baseline_start.y) + "\" font-size=\"" +
           number(size) + "\" font-family=\"sans-serif\" fill=\"" + escaped(colour) + "\">" + escaped(content) +
           "</text>\n";
}

void Svg::begin_group(const std::string& title) {
  body_ += "<g>\n";
  if (!title.empty()) body_ += "<title>" + escaped(title) + "</title>\n";
  ++open_groups_;
}

void Svg::end_group() {
  if (open_groups_ == 0) throw std::logic_error("Svg::end_group: no group is open");
  body_ += "</g>\n";
  --open_groups_;
}

std::string Svg::str() const {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width_px_) + "\" height=\"" +
         std::to_string(height_px_) + "\" viewBox=\"" + number(view_box_.x) + " " + number(view_box_.y) + " " +
         number(view_box_.width) + " " + number(view_box_.height) + "\">\n";
  out += body_;
  for (int i = 0; i < open_groups_; ++i) out += "</g>\n";
  out += "</svg>\n";
  return out;
}

void Svg::write(const std::string& path) const {
  std::ofstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("Svg::write: cannot open " + path + " for writing");
  file << str();
  file.close();
  if (!file) throw std::runtime_error("Svg::write: writing " + path + " failed");
}

}  // namespace cdplab
