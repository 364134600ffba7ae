#include "tests/support/process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tests/support/matrices.hpp"

extern char** environ;

namespace spconv::test {

static std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

run_result run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  temp_dir dir;  // stdout/stderr go to files: no pipe deadlock on large outputs
  const std::string out_path = (dir / "stdout").string(), err_path = (dir / "stderr").string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  // An extra entry replaces an inherited one of the same name (getenv returns the first).
  auto name_of = [](const std::string& e) { return e.substr(0, e.find('=')); };
  for (char** e = environ; *e; ++e) {
    const std::string inherited(*e);
    bool replaced = false;
    for (const auto& x : env) replaced |= name_of(x) == name_of(inherited);
    if (!replaced) env_strings.push_back(inherited);
  }
  for (const auto& e : env) env_strings.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  waitpid(pid, &status, 0);
  run_result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

run_result run_spconv(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {(binary_dir() / "spconv").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

}  // namespace spconv::test
