// A structural check of an XML document before it reaches a recursive parser.
//
// urdfdom parses URDF with TinyXML 2.6, and the MJCF reader parses MJCF with it too. TinyXML
// descends one C++ call frame (several, in fact) per level of element nesting: a 260 KB document
// nested 37,000 levels deep overflows the stack and kills the process. This check walks the
// document iteratively and accepts only well-formed XML in the subset robot descriptions use
// (elements with quoted attributes, text, comments, CDATA, processing instructions such as the
// <?xml?> declaration, a DOCTYPE without an internal subset), nested at most `max_depth` levels,
// with matching end tags. For a document it accepts, every element TinyXML will see is an element
// this check has counted, so the parser's recursion is bounded by `max_depth`. Anything ambiguous
// is refused rather than guessed at: robot descriptions (URDF from xacro or exporters, MJCF) are
// well-formed.
//
// TinyXML also takes time quadratic in the attributes of one element (each new attribute is
// compared with every earlier one, to refuse duplicates: 200,000 attributes on one element take
// it minutes), and its time and memory grow with every node it builds. A parse cannot be
// interrupted, so the check also bounds attributes per element, attributes in the document and
// nodes in the document: a document it accepts is parsed in a bounded time.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "engine/model/build.hpp"

namespace torqued {

struct XmlLimits {
  int max_depth = 64;
  // Most elements with this name (0: no limit), e.g. "link", so that a document describing far
  // more bodies than the caller accepts is refused before it is parsed at all.
  std::string_view counted_element;
  std::size_t max_counted = 0;
  // Most attributes on one element, and in the whole document (0: no limit).
  std::size_t max_element_attributes = 0;
  std::size_t max_attributes = 0;
  // Most nodes TinyXML builds (0: no limit): elements, comments, CDATA sections, <! declarations
  // and processing instructions. Text runs lie between them, so there are no more of those.
  std::size_t max_nodes = 0;
  // The document's format, as error messages name it ("invalid URDF: line 3: ...").
  std::string_view format = "URDF";
};

// The document has more elements named XmlLimits::counted_element than allowed.
class TooManyElementsError : public ModelError {
 public:
  using ModelError::ModelError;
};

// A start tag the check accepted, for a caller that needs a few attribute values before the
// parser runs. The name and values view the document itself (a caller may read on from them);
// values are as written between the quotes (no entity is decoded).
struct XmlElement {
  int depth;         // 1 for the root element
  std::size_t line;  // where its start tag begins, from 1
  std::string_view name;
  std::span<const std::pair<std::string_view, std::string_view>> attributes;  // name, value
};

// Throws ModelError naming the line and what is wrong (TooManyElementsError for the count).
// `on_element`, when given, sees every start tag in document order.
void check_xml_structure(std::string_view xml, const XmlLimits& limits,
                         const std::function<void(const XmlElement&)>& on_element = {});

// The contents of the file at `path`, for the readers of files; ModelError ("cannot read URDF
// file '...': ...", with `format`) when it cannot be read.
std::string read_document_file(const std::string& path, std::string_view format);

}  // namespace torqued
