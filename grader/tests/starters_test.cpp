// Starter generation from solutions, and the guarantee that the committed starters match.
#include "starters/starters.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <stdexcept>

using cdplab::starters::generate;

TEST_CASE("starter leaves out solution regions and keeps the rest") {
  const std::string solution =
      "#include <x>\n"
      "void f() {\n"
      "  // BEGIN SOLUTION\n"
      "  secret();\n"
      "  // END SOLUTION\n"
      "  //| // TODO: do it\n"
      "  //| CDPLAB_TODO();\n"
      "    //|indented();\n"
      "  keep(); // a normal comment\n"
      "}\n";
  CHECK(generate(solution) ==
        "#include <x>\n"
        "void f() {\n"
        "  // TODO: do it\n"
        "  CDPLAB_TODO();\n"
        "    indented();\n"
        "  keep(); // a normal comment\n"
        "}\n");
}

TEST_CASE("starter markers in a TOML file are TOML comments") {
  const std::string solution =
      "[answers]\n"
      "# BEGIN SOLUTION\n"
      "grids = \"1024\"\n"
      "# END SOLUTION\n"
      "#| grids = \"\"\n"
      "// BEGIN SOLUTION\n";
  CHECK(generate(solution, "quiz.toml") == "[answers]\ngrids = \"\"\n// BEGIN SOLUTION\n");
}

TEST_CASE("starter markers must balance") {
  CHECK_THROWS_WITH_AS(generate("// BEGIN SOLUTION\nx\n", "a.cu"), "a.cu:1: BEGIN SOLUTION is never closed",
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(generate("x\n// END SOLUTION\n", "a.cu"), "a.cu:2: END SOLUTION without BEGIN SOLUTION",
                       std::runtime_error);
  CHECK_THROWS_AS(generate("// BEGIN SOLUTION\n// BEGIN SOLUTION\n// END SOLUTION\n"), std::runtime_error);
}

TEST_CASE("starter marker lines tolerate trailing blanks only") {
  CHECK(generate("  // BEGIN SOLUTION  \nx\n// END SOLUTION\r\ny\n") == "y\n");
  // A marker inside other text is ordinary text.
  CHECK(generate("f(); // BEGIN SOLUTION\n") == "f(); // BEGIN SOLUTION\n");
}

TEST_CASE("committed starters match their solutions") {
  const auto pairs = cdplab::starters::compare_all(CDPLAB_SOURCE_DIR);
  REQUIRE_FALSE(pairs.empty());
  for (const auto& pair : pairs) {
    INFO(pair.starter.string(), ": ", pair.problem, " (run `cdplab starters --write`)");
    CHECK(pair.up_to_date);
  }
}
