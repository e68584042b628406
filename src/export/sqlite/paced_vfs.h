#pragma once
// A SQLite VFS that is the default one (unix) except that, on a thread that has a pacer set,
// it lets the pacer pause after each write and sync. This is how the store's lane gives the
// core up inside SQLite's own long stretches: a COMMIT writes the transaction's pages to the
// WAL (about 1 ms of CPU for a 512-span batch) and a checkpoint copies the WAL into the
// database (5–8 ms), both without returning to the store's code in between. Reads, locks and
// the WAL index go straight through; a thread without a pacer (queries, `infertel traces`)
// sees the default VFS unchanged.

#include "pipeline/pacer.h"

namespace infertel::exporting {

// The VFS's name, registered (not as the default) on first use; nullptr when SQLite has no
// default VFS to wrap.
const char* PacedVfsName();

// Sets the calling thread's pacer for the scope's lifetime (the pacer must outlive it) and
// starts it: the scope's first stretch of work is measured from here. Rows and file writes
// inside the scope both pace through it.
// Lets the calling thread's pacer (if any) pause: called between rows.
void PaceBetweenRows();
// Whether a PaceWritesOnThisThread is in effect on this thread.
bool ThreadIsPaced();

class PaceWritesOnThisThread {
 public:
  explicit PaceWritesOnThisThread(pipeline::Pacer* pacer);
  ~PaceWritesOnThisThread();
  PaceWritesOnThisThread(const PaceWritesOnThisThread&) = delete;
  PaceWritesOnThisThread& operator=(const PaceWritesOnThisThread&) = delete;

 private:
  pipeline::Pacer* previous_;
};

}  // namespace infertel::exporting
