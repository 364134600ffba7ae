// The temporary file + rename behind every spconv write (specs/container.md section 5),
// and the registry that lets a fatal signal remove the temporaries it would strand.
#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>

#include "formats/error.hpp"

namespace spconv {
namespace fs = std::filesystem;
namespace {

std::string errno_text(int e) { return std::generic_category().message(e); }

// ---- the registry of pending temporaries -------------------------------------------
// A signal handler may only call async-signal-safe functions and must not take locks, so
// each pending temporary sits, already formatted, in a fixed slot whose state is a
// lock-free atomic. A slot the handler has claimed (taken) is never reused: its path stays
// stable while any handler, on any thread, reads it.
enum slot_state : int { slot_free, slot_filling, slot_armed, slot_taken };
static_assert(std::atomic<int>::is_always_lock_free);

struct slot {
  std::atomic<int> state{slot_free};
  char path[PATH_MAX];
};
// Enough for every temporary one spconv process has open at once (one per write); a
// process that has more leaves the extra ones to the destructor alone.
constexpr int slot_count = 32;
slot registry[slot_count];

// The slot now holding `p` (made absolute: the handler must not depend on the working
// directory), or -1 when it does not fit or every slot is busy.
int registry_add(const fs::path& p) {
  std::error_code ec;
  const fs::path abs = fs::absolute(p, ec);
  const std::string& s = ec ? p.native() : abs.native();
  if (s.size() >= PATH_MAX) return -1;
  for (int i = 0; i < slot_count; ++i) {
    int expected = slot_free;
    if (!registry[i].state.compare_exchange_strong(expected, slot_filling, std::memory_order_acquire)) continue;
    std::memcpy(registry[i].path, s.c_str(), s.size() + 1);
    registry[i].state.store(slot_armed, std::memory_order_release);
    return i;
  }
  return -1;
}

// Frees slot i unless a signal handler took it; the process is then about to die and the
// slot's path must stay as the handler read it.
void registry_remove(int i) noexcept {
  if (i < 0) return;
  int expected = slot_armed;
  registry[i].state.compare_exchange_strong(expected, slot_free, std::memory_order_acq_rel);
}

constexpr int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

// Async-signal-safe: atomics, unlink and raise only. SA_RESETHAND has restored the
// default action by now, so the re-raised signal ends the process as if never caught.
extern "C" void remove_pending_and_die(int sig) {
  for (auto& s : registry) {
    int expected = slot_armed;
    if (s.state.compare_exchange_strong(expected, slot_taken, std::memory_order_acq_rel) || expected == slot_taken)
      ::unlink(s.path);
  }
  ::raise(sig);
}

}  // namespace

atomic_file::atomic_file(const fs::path& target) : target_(target) {
  const std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..") fail(errc::io, target.string() + ": not a file name");
  // Hidden, and named after the target so that a leftover (SIGKILL) says what it was. The
  // pid and a process-wide counter keep concurrent writers apart; a name that exists
  // (left by an earlier process with the same pid) is skipped. Built by appending: GCC 12
  // warns falsely (-Wrestrict) on "literal" + std::string&&.
  std::string prefix = ".";
  prefix += name;
  prefix += ".tmp-";
  prefix += std::to_string(::getpid());
  prefix += '-';
  static std::atomic<unsigned long> counter{0};
  for (int attempt = 0;; ++attempt) {
    if (attempt == 1000) fail(errc::io, target.string() + ": cannot find a free temporary file name beside it");
    fs::path candidate = target.parent_path() / (prefix + std::to_string(counter++));
    // Any failure but "exists" is left to the caller's creation, which reports it.
    struct stat st {};
    if (::lstat(candidate.c_str(), &st) != 0) {
      path_ = std::move(candidate);
      break;
    }
  }
  slot_ = registry_add(path_);
  pending_ = true;
}

atomic_file::atomic_file(atomic_file&& other) noexcept
    : target_(std::move(other.target_)), path_(std::move(other.path_)), slot_(other.slot_), pending_(other.pending_) {
  other.slot_ = -1;
  other.pending_ = false;
}

atomic_file& atomic_file::operator=(atomic_file&& other) noexcept {
  if (this != &other) {
    discard();
    target_ = std::move(other.target_);
    path_ = std::move(other.path_);
    slot_ = other.slot_;
    pending_ = other.pending_;
    other.slot_ = -1;
    other.pending_ = false;
  }
  return *this;
}

atomic_file::~atomic_file() { discard(); }

// Unlink before leaving the registry: a signal in between then unlinks a name that is
// gone (harmless), never misses a file that is still there.
void atomic_file::discard() noexcept {
  if (!pending_) return;
  ::unlink(path_.c_str());
  registry_remove(slot_);
  slot_ = -1;
  pending_ = false;
}

void atomic_file::commit(bool replace) {
  if (!pending_) fail(errc::usage, target_.string() + ": nothing to commit (committed already or moved from)");
  const std::string t = target_.string(), tmp = path_.string();
  // The data must be on disk before the name points at it, or a crash could leave a
  // complete-looking target with missing blocks.
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    fail(errc::io, t + ": cannot sync " + tmp + ": " + errno_text(e));
  }
  ::close(fd);
  int r = replace ? std::rename(path_.c_str(), target_.c_str())
                  : ::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE);
  // File systems without RENAME_NOREPLACE: the caller's existence check before writing stands.
  if (r != 0 && !replace && errno == EINVAL) r = std::rename(path_.c_str(), target_.c_str());
  if (r != 0) {
    const int e = errno;
    if (e == EEXIST) fail(errc::usage, t + " exists (use --force)");
    fail(errc::io, t + ": cannot rename " + tmp + " onto it: " + errno_text(e));
  }
  // The rename happened: leave the registry after it, so that no signal can strand the
  // temporary (an unlink of the vanished name is harmless).
  registry_remove(slot_);
  slot_ = -1;
  pending_ = false;
  // Makes the rename itself durable. Best effort: some file systems refuse to fsync a
  // directory, and the file is already complete and in place.
  const fs::path dir = target_.parent_path().empty() ? fs::path(".") : target_.parent_path();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

void install_cleanup_on_signals() {
  struct sigaction sa {};
  sa.sa_handler = remove_pending_and_die;
  // The other cleanup signals wait while a handler runs, so none cuts another short.
  sigemptyset(&sa.sa_mask);
  for (int sig : cleanup_signals) sigaddset(&sa.sa_mask, sig);
  sa.sa_flags = SA_RESETHAND;
  for (int sig : cleanup_signals) {
    struct sigaction old {};
    // Only default actions are replaced: an ignored signal stays ignored (nohup, `cmd &`
    // in a non-interactive shell), another handler stays in charge, and a second call
    // changes nothing.
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO))
      ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace spconv
