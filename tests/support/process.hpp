// Runs the real spconv binary (or any program) as a child process and captures its
// exit code, stdout and stderr: the CLI tests test what a user sees.
#pragma once
#include <string>
#include <vector>

namespace spconv::test {

struct run_result {
  int code = -1;  // exit status, or 128 + signal
  std::string out, err;
};

// Runs `argv` (argv[0] is the program path) with optional extra environment entries
// ("NAME=value"), waiting for it to finish.
run_result run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});

// Runs build/spconv with these arguments.
run_result run_spconv(const std::vector<std::string>& args);

}  // namespace spconv::test
