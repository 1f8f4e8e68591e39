// `cdplab probe`: builds the CDP probe in this cdplab's own build tree and runs it. The probe
// measures, on the GPU present, the CDP2 facts the lessons state (docs/measured-limits.md).
#include "commands.h"

#include "build_config.h"
#include "grading/build_tree.h"

#include <unistd.h>

#include <iostream>

namespace cdplab::cli {

int run_probe(Context& ctx, const std::vector<std::string>& args) {
  const grading::BuildTree tree(ctx.root, ctx.own_build, ctx.toolchain);
  std::cerr << "cdplab: running " << build_config::kProbeExecutable << "\n";
  return build_and_exec(tree, "cdplab_probe", build_config::kProbeExecutable, args, "the probe");
}

}  // namespace cdplab::cli
