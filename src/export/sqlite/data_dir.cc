#include "export/sqlite/data_dir.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace infertel::exporting {

std::optional<DataDir> ChooseDataDir(std::string_view flag, const config::EnvLookup& env, bool root,
                                     std::string* error) {
  auto given = [&](std::string_view name) -> std::optional<std::string> {
    auto v = env(name);
    if (!v || v->empty()) return std::nullopt;
    return v;
  };
  if (!flag.empty()) return DataDir{std::string(flag), "from --data-dir"};
  if (auto v = given(kDataDirEnv)) return DataDir{*v, fmt::format("from {}", kDataDirEnv)};
  if (auto v = given("STATE_DIRECTORY")) {
    // systemd sets a colon-separated list when StateDirectory= names several.
    return DataDir{v->substr(0, v->find(':')), "from STATE_DIRECTORY (systemd StateDirectory=)"};
  }
  if (root) return DataDir{"/var/lib/infertel", "the default when running as root"};
  if (auto v = given("XDG_STATE_HOME"))
    return DataDir{(std::filesystem::path(*v) / "infertel").string(),
                   "the default for a user: $XDG_STATE_HOME/infertel"};
  if (auto v = given("HOME"))
    return DataDir{(std::filesystem::path(*v) / ".local/state/infertel").string(),
                   "the default for a user: $HOME/.local/state/infertel"};
  *error = fmt::format(
      "no data directory for the store: not root, and neither XDG_STATE_HOME nor HOME is set; "
      "give --data-dir DIR (or {}), --store FILE, or --no-store",
      kDataDirEnv);
  return std::nullopt;
}

std::optional<std::string> StoreToRead(const std::string& store, std::string_view data_dir_flag,
                                       std::string* where, std::string* error) {
  if (!store.empty()) {
    *where = "from --store";
    return store;
  }
  auto dir = ChooseDataDir(data_dir_flag, config::ProcessEnv(), ::geteuid() == 0, error);
  if (!dir) return std::nullopt;
  *where = fmt::format("data directory {}: {}", dir->path, dir->rule);
  return (std::filesystem::path(dir->path) / kStoreDirName).string();
}

bool MakeDataDir(const std::string& dir, std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return true;
  fs::path p = fs::absolute(dir, ec).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "a/b/" ends in an empty element
  fs::path partial;
  for (auto it = p.begin(); it != p.end(); ++it) {
    partial /= *it;
    if (fs::is_directory(partial, ec)) continue;
    const bool last = std::next(it) == p.end();
    if (::mkdir(partial.c_str(), last ? 0750 : 0700) != 0 && errno != EEXIST) {
      *error = fmt::format("cannot create the data directory {}: {}: {}", dir, partial.string(),
                           std::strerror(errno));
      return false;
    }
    // Exactly 0750 whatever the umask: the group may read the store, others may not.
    if (last) ::chmod(partial.c_str(), 0750);
  }
  return true;
}

}  // namespace infertel::exporting
