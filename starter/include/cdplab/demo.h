/// @file demo.h
/// @brief What every chapter's demo program shares: its command line, its banner, and running
///        one exercise's part so that an unfinished or failing exercise does not end the demo.
///
/// Every demo takes the same arguments, `demo-<chapter> [--out FOLDER] [seed]`: the pictures it
/// draws go into FOLDER (the current folder by default), and the seed picks its input data.
#pragma once

#include <filesystem>
#include <functional>

namespace cdplab {

/// A demo's command line.
struct DemoOptions {
  std::filesystem::path out_dir = ".";  ///< where the demo writes its pictures (created if missing)
  unsigned long long seed = 1;          ///< seeds the demo's input data
  bool help = false;                    ///< -h or --help was given: print the usage and stop
};

/// Reads `[--out FOLDER] [seed]`. Throws std::invalid_argument for anything else.
DemoOptions parse_demo_options(int argc, char** argv);

/// Starts a demo: unbuffered output, the usage for --help, the GPU it runs on, and the picture
/// folder. Returns the exit status the demo should end with now (0 after --help, 1 without a
/// usable GPU or with bad arguments), or -1 when the demo should go on.
int start_demo(const char* chapter, int argc, char** argv, DemoOptions& options);

/// Runs one exercise's part of a demo under a heading. What stops it (a TODO not yet done, a
/// failed launch, a CUDA error) is printed, and the demo goes on with the next part.
void run_demo(const char* title, const std::function<void()>& demo);

}  // namespace cdplab
