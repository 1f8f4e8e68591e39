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
  const auto built = tree.build({"cdplab_probe"});
  if (!built.ok()) {
    std::cerr << built.output;
    std::cerr << "cdplab: the probe does not build (see above)\n";
    return kSomeFailed;
  }
  const std::string& executable = build_config::kProbeExecutable;
  std::cerr << "cdplab: running " << executable << "\n";
  std::vector<char*> argv = {const_cast<char*>(executable.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  execv(executable.c_str(), argv.data());
  throw UsageError("cannot start " + executable);
}

}  // namespace cdplab::cli
