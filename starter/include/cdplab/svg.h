/// @file svg.h
/// @brief A small SVG writer for the demos: polylines, circles, rectangles and text in a
///        coordinate system of your choice, written to a file any web browser shows.
///
/// The picture is described in user coordinates. The view box says which rectangle of them
/// the picture shows; the image size says how many pixels it takes on the screen. SVG's y
/// axis points down: flip it yourself (y' = top - y) when your data has y pointing up.
///
/// ```cpp
/// cdplab::Svg svg(cdplab::SvgBox{0, 0, 100, 50}, 800, 400);
/// svg.rect({0, 0, 100, 50}, cdplab::SvgStyle::filled("#ffffff"));
/// svg.polyline({{10, 40}, {50, 10}, {90, 40}}, cdplab::SvgStyle::stroked("#1f77b4", 0.5));
/// svg.text({50, 48}, "a curve", 3);
/// svg.write("picture.svg");
/// ```
#pragma once

#include <string>
#include <vector>

namespace cdplab {

/// A point in the picture's user coordinates.
struct SvgPoint {
  double x;  ///< horizontal, growing to the right
  double y;  ///< vertical, growing downwards (SVG's convention)
};

/// A rectangle in user coordinates: its top-left corner and its size.
struct SvgBox {
  double x;       ///< left edge
  double y;       ///< top edge
  double width;   ///< extent to the right, > 0 for a view box
  double height;  ///< extent downwards, > 0 for a view box
};

/// How a shape is painted. Colours are SVG colour strings ("#d62728", "red", "none").
struct SvgStyle {
  std::string stroke = "none";  ///< outline colour
  double stroke_width = 1.0;    ///< outline width, in user units
  std::string fill = "none";    ///< fill colour
  double opacity = 1.0;         ///< 0 (invisible) to 1 (opaque)

  /// An outline of `colour`, `width` user units wide, not filled.
  static SvgStyle stroked(const std::string& colour, double width);
  /// A shape filled with `colour`, without an outline.
  static SvgStyle filled(const std::string& colour);
};

/// An SVG document built shape by shape, in drawing order (later shapes cover earlier ones).
///
/// Groups (begin_group() ... end_group()) nest; a group's title is what a browser shows as a
/// tooltip over its shapes. Text is escaped, so any string may be drawn.
class Svg {
 public:
  /// A picture that shows the user-coordinate rectangle `view_box` in an image of
  /// `width_px` by `height_px` pixels. Throws std::invalid_argument for an empty view box or size.
  Svg(SvgBox view_box, int width_px, int height_px);

  /// A line through `points`, in order (not closed). Fewer than two points draw nothing.
  void polyline(const std::vector<SvgPoint>& points, const SvgStyle& style);
  /// A circle of radius `radius` around `centre`.
  void circle(SvgPoint centre, double radius, const SvgStyle& style);
  /// A rectangle.
  void rect(SvgBox box, const SvgStyle& style);
  /// `content` in a font `size` user units high, starting at `baseline_start`, in `colour`.
  void text(SvgPoint baseline_start, const std::string& content, double size, const std::string& colour = "#000000");

  /// Starts a group of shapes, with an optional `title` (a tooltip). Close it with end_group().
  void begin_group(const std::string& title = "");
  /// Ends the innermost open group. Throws std::logic_error when no group is open.
  void end_group();

  /// The whole document as text; groups still open are closed in it.
  std::string str() const;
  /// Writes str() to `path`. Throws std::runtime_error when the file cannot be written.
  void write(const std::string& path) const;

 private:
  SvgBox view_box_;
  int width_px_;
  int height_px_;
  int open_groups_ = 0;
  std::string body_;
};

}  // namespace cdplab
