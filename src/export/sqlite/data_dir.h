#pragma once
// Where the embedded store lives when no --store PATH is given: the data directory
// (docs/store.md, "Where the store is").
//
// The first rule that applies chooses it:
//   1. --data-dir DIR;
//   2. INFERTEL_DATA_DIR;
//   3. STATE_DIRECTORY, which systemd sets for a unit with StateDirectory= (its first entry);
//   4. /var/lib/infertel when running as root;
//   5. $XDG_STATE_HOME/infertel, else $HOME/.local/state/infertel (the XDG base directory
//      specification's place for state that persists between runs).
// The store is the directory `store` in it (docs/store.md).

#include <optional>
#include <string>
#include <string_view>

#include "config/settings.h"

namespace infertel::exporting {

inline constexpr std::string_view kDataDirEnv = "INFERTEL_DATA_DIR";
inline constexpr std::string_view kStoreDirName = "store";

struct DataDir {
  std::string path;
  std::string rule;  // which rule chose it, in words: "from --data-dir", "running as root", ...
};

// The data directory by the rules above; `flag` is --data-dir's value ("" when not given).
// nullopt and *error when no rule applies (not root, and neither XDG_STATE_HOME nor HOME set).
std::optional<DataDir> ChooseDataDir(std::string_view flag, const config::EnvLookup& env, bool root,
                                     std::string* error);

// For the commands that read the store (`infertel traces`, `infertel metrics`): `store` when
// given, else the store directory in the data directory that the agent chose by the same rules,
// without creating anything. *where says which (for "no store at ..." messages).
std::optional<std::string> StoreToRead(const std::string& store, std::string_view data_dir_flag,
                                       std::string* where, std::string* error);

// Creates `dir` if absent: missing parents with mode 0700 (as the XDG specification asks of
// its base directories), `dir` itself with mode 0750. False and *error when it cannot.
bool MakeDataDir(const std::string& dir, std::string* error);

}  // namespace infertel::exporting
