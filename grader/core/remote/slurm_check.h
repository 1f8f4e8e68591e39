/// @file slurm_check.h
/// @brief A check run as a Slurm job of the student's own account, on a cluster whose login node
///        shares its file system with the GPU nodes: the same job scripts, sbatch and squeue as
///        `cdplab grade --slurm` (batch/slurm.h).
///
/// The job's folder (below the student's build tree) holds a copy of the exercise files taken when
/// the check started (an edit while the job waits changes nothing), the job script, its log and the
/// report. The job runs `cdplab remote-check` on that copy, which grades it as `cdplab check` does
/// and writes the report. Meanwhile the student sees the job's id, its state and its place in the
/// queue, and Ctrl-C cancels the job.
#pragma once

#include "remote/course.h"
#include "remote/protocol.h"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace cdplab::remote {

struct SlurmCheck {
  SlurmTarget target;
  std::filesystem::path job_dir;         ///< holds submission/, check.sbatch, job.out, report.json
  std::filesystem::path cdplab;          ///< the cdplab executable the job runs (absolute)
  std::vector<std::string> worker_args;  ///< remote-check's arguments after its folder
  batch::slurm::Tools tools;
  double poll_seconds = 1;

  std::filesystem::path script() const { return job_dir / "check.sbatch"; }
  std::filesystem::path log() const { return job_dir / "job.out"; }
  std::filesystem::path report() const { return job_dir / "report.json"; }
  std::filesystem::path submission() const { return job_dir / "submission"; }
};

/// The job script: #SBATCH lines from the course's settings, its setup lines, then cdplab.
std::string check_script(const SlurmCheck& check);

/// One line for a job that left the queue without a report, from how Slurm says it ended.
std::string explain_job_end(const std::string& id, const std::string& state, const std::filesystem::path& log);

/// Submits the job and waits for its report, saying each change of its state (and the lines the
/// job prints) to `progress`. Ctrl-C cancels the job. Throws RemoteError with one line when no
/// report came back (sbatch refused the job, it was cancelled, it ran past its time limit).
grading::GradeReport check_on_slurm(const SlurmCheck& check,
                                    const std::function<void(const std::string& line)>& progress);

/// "1st", "2nd", "3rd", "11th", ...
std::string ordinal(int n);

}  // namespace cdplab::remote
