/// @file serve.h
/// @brief The course's GPU server: `cdplab serve --student NAME`, the one command a student's key
///        may run (an OpenSSH forced command in the server's `authorized_keys`).
///
/// One request per connection (remote/protocol.h): the request takes a place among its student's
/// checks (at most `queue_per_student` at once, uploading or waiting; more are refused), the
/// submission arrives on standard input within a time limit and is kept whole; then the request
/// waits its turn, is unpacked by the class grader's rules (batch/archive.h: regular files inside
/// its folder only, sizes bounded to what exercise files need)
/// into the student's own folder, graded as `cdplab check` grades (the workbook's host code, the
/// student's device code, host parts in a box of their own) by `cdplab remote-check` in a process
/// of its own, always in the box (live submitters, one account for everyone's keys), and the
/// report goes back on standard output.
///
/// The student's name comes from the key's line (`--student`), never from the request. Below
/// the work folder (course.toml [serve] work):
/// - `students/<name>/requests/<id>/`: one request's upload, clean copy and build tree, removed
///   when it ends; `students/<name>/last-report.json`: the latest report;
/// - `students/<name>/slot-<k>.lock`, `queue.lock`, `waiting/<pid>`: a student's checks run
///   `per_student` at a time, at most `queue_per_student` upload or wait (more are refused at
///   once), so that one student's flood of requests queues behind everyone else's;
/// - `gpus/gpu-<g>-<k>.lock`: `gpus` x `share_gpu` slots, a check holds one while it grades;
///   `gpus/gpu-<g>.turns`: the checks on GPU g take turns with it as a class grading does
///   (grading/gpu_turns.h): speed checks and timed suites have it alone;
/// - `serve.log`: one line per request: when, who, what came of it, how long.
/// A request past the time limit is stopped (SIGTERM, then SIGKILL), and both sides are told; a
/// client that went away (its connection cut) stops its grading at once.
#pragma once

#include "manifest/manifest.h"
#include "remote/course.h"

#include <filesystem>
#include <string>

namespace cdplab::remote {

struct ServeOptions {
  std::string student;             ///< from the key's line
  ServeSettings settings;          ///< course.toml's [serve], then the key line's options
  bool fresh_seeds = false;        ///< a fresh seed per request (a grading key); else the request's or the practice seed
  std::filesystem::path cdplab;    ///< this executable: the worker it starts
};

/// The exit statuses of serve.
enum ServeStatus : int {
  kServed = 0,     ///< a report went back
  kRefused = 1,    ///< the request was refused or failed; the reply says why
  kMisconfigured = 2,  ///< the key's line or the server is set up wrong; nothing was read
};

/// Serves one request: `request_line` as sshd gave it (SSH_ORIGINAL_COMMAND; nullptr when the
/// client asked for a shell), the submission on `in_fd`, the reply on `out_fd`, progress on
/// `err_fd`.
int serve(const ServeOptions& options, const manifest::Workbook& book, const char* request_line, int in_fd,
          int out_fd, int err_fd);

/// Whether `name` may name a student's folder as it is (batch::student_folder keeps it).
bool plain_student_name(const std::string& name);

}  // namespace cdplab::remote
