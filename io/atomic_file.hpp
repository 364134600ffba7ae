// Writing a file atomically: the data goes to a hidden temporary file beside the target,
// which is renamed onto it once complete. Readers see the old target or the new one,
// never a partial file; a failed or interrupted write leaves the target untouched.
// specs/container.md section 5 describes the mechanism the MTX and HDF5 writers share.
#pragma once
#include <filesystem>

namespace spconv {

// Names, tracks, commits and cleans up the temporary file for one target. Creating the
// file is the caller's job (with exclusive creation: O_EXCL, H5F_ACC_EXCL), since the
// writers open it differently.
class atomic_file {
 public:
  // Picks a free name "<dir>/.<name>.tmp-<pid>-<counter>" in the target's directory
  // (the same file system, so the rename is atomic) and registers it for the signal
  // cleanup. errc::io if the target has no file name.
  explicit atomic_file(const std::filesystem::path& target);
  atomic_file(atomic_file&& other) noexcept;
  atomic_file& operator=(atomic_file&& other) noexcept;
  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;
  // Removes the temporary file unless committed.
  ~atomic_file();

  const std::filesystem::path& path() const noexcept { return path_; }
  const std::filesystem::path& target() const noexcept { return target_; }

  // fsyncs the (closed or still open) temporary file, renames it onto the target, then
  // fsyncs the directory (best effort). Without `replace`, an existing target is refused
  // (errc::usage "<target> exists (use --force)") and left as it was. Other failures are
  // errc::io naming the target; the temporary file is then removed by the destructor.
  void commit(bool replace);

 private:
  void discard() noexcept;

  std::filesystem::path target_, path_;
  int slot_ = -1;  // index in the registry of pending temporaries, -1 if not registered
  bool pending_ = false;
};

// Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGPIPE that remove every pending
// temporary file of the process, then die of the signal as they would have without the
// handler. A signal that is ignored when this is called stays ignored (nohup, background
// jobs). Call it once, early in main(); safe to call again.
void install_cleanup_on_signals();

}  // namespace spconv
