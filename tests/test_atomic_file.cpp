// io/atomic_file.hpp: the temporary file beside the target, its commit, its removal on
// failure and on a fatal signal, down to the CLI being stopped by SIGTERM mid-write.
#include "io/atomic_file.hpp"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "io/hdf5/container.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/matrices.hpp"

extern char** environ;

using namespace spconv;
namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// Runs `child` in a forked process and returns the wait status. The child reports its own
// failures through exit codes (no gtest there).
template <class F>
int in_child(F&& child) {
  const pid_t pid = fork();
  if (pid == 0) {
    try {
      _exit(child());
    } catch (...) {
      _exit(100);
    }
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) ADD_FAILURE() << "fork/waitpid failed";
  return status;
}

}  // namespace

TEST(AtomicFile, TemporaryIsHiddenBesideTheTarget) {
  test::temp_dir d;
  atomic_file a(d / "m.h5"), b(d / "m.h5");
  EXPECT_EQ(a.target(), d / "m.h5");
  EXPECT_EQ(a.path().parent_path(), d.path);
  EXPECT_EQ(a.path().filename().string().rfind(".m.h5.tmp-" + std::to_string(getpid()) + "-", 0), 0u) << a.path();
  EXPECT_NE(a.path(), b.path());
  // A name that exists (left by an earlier process with this pid) is never handed out.
  atomic_file probe(d / "x");
  const std::string stem = probe.path().filename().string();
  const unsigned long next = std::stoul(stem.substr(stem.rfind('-') + 1)) + 1;
  const std::string prefix = stem.substr(0, stem.rfind('-') + 1);
  for (unsigned long k = next; k < next + 3; ++k) write_text(d / (prefix + std::to_string(k)), "stale");
  atomic_file c(d / "x");
  EXPECT_FALSE(fs::exists(c.path())) << c.path();
  EXPECT_EQ(read_bytes(d / (prefix + std::to_string(next))), "stale");
  // A relative target gets a relative temporary in the same (current) directory.
  EXPECT_EQ(atomic_file("rel.mtx").path().parent_path(), fs::path());
  test::expect_error([&] { atomic_file bad(d.path / ""); }, errc::io, "not a file name");
}

TEST(AtomicFile, CommitMovesTheFileIntoPlace) {
  test::temp_dir d;
  {
    atomic_file f(d / "out.txt");
    write_text(f.path(), "first");
    f.commit(/*replace=*/false);
    EXPECT_FALSE(fs::exists(f.path()));
  }
  EXPECT_EQ(read_bytes(d / "out.txt"), "first");
  EXPECT_EQ(entries(d.path), std::set<std::string>{"out.txt"});
  {
    atomic_file f(d / "out.txt");
    write_text(f.path(), "second");
    f.commit(/*replace=*/true);
    test::expect_error([&] { f.commit(true); }, errc::usage, "nothing to commit");
  }
  EXPECT_EQ(read_bytes(d / "out.txt"), "second");
  EXPECT_EQ(entries(d.path), std::set<std::string>{"out.txt"});
}

TEST(AtomicFile, UncommittedLeavesNothing) {
  test::temp_dir d;
  {
    atomic_file f(d / "out.txt");
    write_text(f.path(), "partial");
    EXPECT_EQ(entries(d.path).size(), 1u);
  }
  { atomic_file never_created(d / "out.txt"); }
  EXPECT_TRUE(entries(d.path).empty());
}

TEST(AtomicFile, CommitWithoutReplaceRefusesAnExistingTarget) {
  test::temp_dir d;
  write_text(d / "out.txt", "old");
  {
    atomic_file f(d / "out.txt");
    write_text(f.path(), "new");
    test::expect_error([&] { f.commit(/*replace=*/false); }, errc::usage, (d / "out.txt").string() + " exists (use --force)");
    EXPECT_EQ(read_bytes(d / "out.txt"), "old");
    EXPECT_EQ(read_bytes(f.path()), "new");
  }
  EXPECT_EQ(entries(d.path), std::set<std::string>{"out.txt"});
}

TEST(AtomicFile, FailedRenameIsAnIoErrorNamingTheTarget) {
  test::temp_dir d;
  fs::create_directory(d / "busy");
  write_text(d / "busy" / "keep", "x");  // a non-empty directory cannot be renamed over
  {
    atomic_file f(d / "busy");
    write_text(f.path(), "data");
    test::expect_error([&] { f.commit(true); }, errc::io, (d / "busy").string() + ": cannot rename");
  }
  EXPECT_EQ(entries(d.path), std::set<std::string>{"busy"});
  // The temporary itself cannot be synced when it was never created.
  atomic_file g(d / "g");
  test::expect_error([&] { g.commit(true); }, errc::io, (d / "g").string() + ": cannot sync");
}

TEST(AtomicFile, MoveHandsOverTheTemporary) {
  test::temp_dir d;
  atomic_file a(d / "out.txt");
  write_text(a.path(), "moved");
  atomic_file b(std::move(a));
  atomic_file c(d / "other.txt");
  write_text(c.path(), "dropped");
  c = std::move(b);  // drops c's own temporary
  EXPECT_EQ(entries(d.path).size(), 1u);
  c.commit(false);
  EXPECT_EQ(read_bytes(d / "out.txt"), "moved");
  EXPECT_EQ(entries(d.path), std::set<std::string>{"out.txt"});
}

TEST(AtomicFile, SigtermRemovesPendingTemporaries) {
  test::temp_dir d;
  const int status = in_child([&] {
    install_cleanup_on_signals();
    atomic_file done(d / "done.txt");
    write_text(done.path(), "kept");
    done.commit(false);
    atomic_file a(d / "a.h5"), b(d / "b.mtx");
    write_text(a.path(), "partial");
    write_text(b.path(), "partial");
    if (entries(d.path).size() != 3) return 1;
    raise(SIGTERM);
    return 2;  // not reached: the handler re-raises with the default action
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  // The committed file is the target's now and stays; the pending ones are gone.
  EXPECT_EQ(entries(d.path), std::set<std::string>{"done.txt"});
}

TEST(AtomicFile, IgnoredSignalStaysIgnored) {
  test::temp_dir d;
  const int status = in_child([&] {
    signal(SIGHUP, SIG_IGN);  // as under nohup
    install_cleanup_on_signals();
    atomic_file a(d / "a.h5");
    write_text(a.path(), "partial");
    raise(SIGHUP);
    return fs::exists(a.path()) ? 0 : 1;
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(entries(d.path).empty());
}

// spconv converting a large Matrix Market file is stopped by SIGTERM once its temporary
// exists: no temporary and no partial target may remain.
TEST(AtomicFile, SigtermStopsTheCliWithoutLeftovers) {
  test::temp_dir in, out;
  // 2.5 million entries, five distinct columns per row, in ~60 MB of text: big enough
  // that the container write takes a while, written here in a fraction of a second.
  const std::int64_t n = 500000, per_row = 5, step = 99991;
  std::string text = "%%MatrixMarket matrix coordinate real general\n" + std::to_string(n) + " " +
                     std::to_string(n) + " " + std::to_string(n * per_row) + "\n";
  const std::size_t head = text.size();
  text.resize(head + static_cast<std::size_t>(n * per_row) * 48);
  char* p = text.data() + head;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t k = 0; k < per_row; ++k) {
      p = std::to_chars(p, p + 20, r + 1).ptr;
      *p++ = ' ';
      p = std::to_chars(p, p + 20, (r + k * step) % n + 1).ptr;
      *p++ = ' ';
      p = std::to_chars(p, p + 25, value(rng)).ptr;
      *p++ = '\n';
    }
  text.resize(static_cast<std::size_t>(p - text.data()));
  write_text(in / "big.mtx", text);
  text.clear();
  text.shrink_to_fit();

  const std::string exe = (test::binary_dir() / "spconv").string(), src = (in / "big.mtx").string(),
                    target = (out / "big.h5").string(), err = (in / "stderr").string();
  std::vector<std::string> args = {exe, src, "--to", "csr", target};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ASSERT_EQ(rc, 0) << "cannot start " << exe;

  // Signal as soon as the temporary appears; the deadline only bounds a slow machine
  // (a signal before the temporary exists must leave nothing either).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(4);
  int status = 0;
  bool exited = false, saw_temporary = false;
  while (!exited && !saw_temporary && std::chrono::steady_clock::now() < deadline) {
    for (const auto& name : entries(out.path)) saw_temporary |= name.find(".tmp-") != std::string::npos;
    if (!saw_temporary) {
      exited = waitpid(pid, &status, WNOHANG) == pid;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  }
  if (!exited) {
    kill(pid, SIGTERM);
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
  }
  SCOPED_TRACE("saw the temporary: " + std::to_string(saw_temporary) + "; stderr: " + read_bytes(err));

  if (WIFSIGNALED(status)) {
    EXPECT_EQ(WTERMSIG(status), SIGTERM);
  } else {
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  // Never a temporary. A target exists only if the rename beat the signal (the process
  // finished, or was at its very end), and is then complete.
  const std::set<std::string> left = entries(out.path);
  if (left.empty()) {
    EXPECT_TRUE(WIFSIGNALED(status)) << "spconv succeeded but wrote nothing";
  } else {
    ASSERT_EQ(left, std::set<std::string>{"big.h5"});
    const container_info info = read_container_info(target);
    EXPECT_EQ(info.rows, n);
    EXPECT_EQ(info.nnz, n * per_row);
  }
}
