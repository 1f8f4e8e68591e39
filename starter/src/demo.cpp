#include "cdplab/demo.h"

#include "cdplab/check.h"
#include "cdplab/gpu_info.h"

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>

namespace cdplab {

DemoOptions parse_demo_options(int argc, char** argv) {
  DemoOptions options;
  bool seed_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      options.help = true;
    } else if (arg == "--out") {
      if (i + 1 >= argc) throw std::invalid_argument("--out needs a folder");
      options.out_dir = argv[++i];
    } else if (!seed_given && !arg.empty() && arg.find_first_not_of("0123456789") == std::string::npos) {
      options.seed = std::stoull(arg);
      seed_given = true;
    } else {
      throw std::invalid_argument("unexpected argument '" + arg + "'");
    }
  }
  return options;
}

int start_demo(const char* chapter, int argc, char** argv, DemoOptions& options) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  try {
    options = parse_demo_options(argc, argv);
  } catch (const std::exception& e) {
    std::printf("%s\nusage: %s [--out FOLDER] [seed]\n", e.what(), argv[0]);
    return 1;
  }
  if (options.help) {
    std::printf("usage: %s [--out FOLDER] [seed]\n  --out FOLDER  where the pictures go (default: the current folder)\n"
                "  seed          which input data the demo makes (default 1)\n",
                argv[0]);
    return 0;
  }
  const GpuInfo gpu = query_gpu();
  if (!gpu.available) {
    std::printf("no usable CUDA GPU: %s\n", gpu.problem.c_str());
    return 1;
  }
  std::error_code made;
  std::filesystem::create_directories(options.out_dir, made);
  std::printf("chapter %s demo on %s (compute capability %d.%d), seed %llu\n", chapter, gpu.name.c_str(), gpu.major,
              gpu.minor, options.seed);
  return -1;
}

void run_demo(const char* title, const std::function<void()>& demo) {
  std::printf("\n== %s ==\n", title);
  try {
    demo();
  } catch (const NotImplemented& e) {
    std::printf("  %s\n", e.what());
  } catch (const DeviceLaunchError& e) {
    std::printf("  a launch from device code failed: %s\n", e.what());
  } catch (const CudaError& e) {
    std::printf("  CUDA error: %s\n", e.what());
    std::printf("  (after a kernel fault the GPU context is unusable: the parts below fail too)\n");
  } catch (const std::exception& e) {
    std::printf("  error: %s\n", e.what());
  }
}

}  // namespace cdplab
