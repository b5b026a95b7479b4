// A structural check of an XML document before it reaches a recursive parser.
//
// urdfdom parses URDF with TinyXML 2.6, which descends one C++ call frame (several, in fact) per
// level of element nesting: a 260 KB document nested 37,000 levels deep overflows the stack and
// kills the process. This check walks the document iteratively and accepts only well-formed XML
// in the subset robot descriptions use (elements with quoted attributes, text, comments, CDATA,
// processing instructions such as the <?xml?> declaration, a DOCTYPE without an internal subset),
// nested at most `max_depth` levels, with matching end tags. For a document it accepts, every
// element TinyXML will see is an element this check has counted, so the parser's recursion is
// bounded by `max_depth`. Anything ambiguous is refused rather than guessed at: URDF files are
// written by tools (xacro, exporters) and are well-formed.
#pragma once

#include <cstddef>
#include <string_view>

#include "engine/model/build.hpp"

namespace torqued {

struct XmlLimits {
  int max_depth = 64;
  // Most elements with this name (0: no limit), e.g. "link", so that a document describing far
  // more bodies than the caller accepts is refused before it is parsed at all.
  std::string_view counted_element;
  std::size_t max_counted = 0;
};

// The document has more elements named XmlLimits::counted_element than allowed.
class TooManyElementsError : public ModelError {
 public:
  using ModelError::ModelError;
};

// Throws ModelError naming the line and what is wrong (TooManyElementsError for the count).
void check_xml_structure(std::string_view xml, const XmlLimits& limits);

}  // namespace torqued
