// Reading the embedded store from tests: `infertel spans --json` (one JSON object per line, the
// fields of docs/store.md, "Reading the store"), so that no test depends on the file layout.
import { runInfertel } from './proc.mjs';

/**
 * The store's spans (or, with `logs`, log records), oldest arrival first. `trace`: only that
 * trace; `name`: only spans of that name (log records: that event.name). Times are decimal
 * strings (exact past 2^53); attributes, events, links, resource and body are JSON values.
 * Throws when the store cannot be read (missing, old format).
 */
export async function storeRows(store, { trace, name, logs = false, timeoutMs = 20000 } = {}) {
  const args = ['spans', '--store', store, '--json'];
  if (trace) args.push('--trace', trace);
  if (name) args.push('--name', name);
  if (logs) args.push('--logs');
  const r = await runInfertel(args, { timeoutMs });
  if (r.code !== 0) throw new Error(`infertel ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
}

export const storeSpans = (store, options = {}) => storeRows(store, options);
export const storeLogs = (store, options = {}) => storeRows(store, { ...options, logs: true });

/** Bytes of every file in a store directory (partitions, their WALs, metrics.db, ...). */
export async function storeDiskBytes(dir) {
  const fs = await import('node:fs');
  let n = 0;
  let names = [];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    try {
      const st = fs.statSync(`${dir}/${name}`);
      if (st.isFile()) n += st.size;
    } catch {
      // removed between the listing and the stat
    }
  }
  return n;
}

/**
 * The files of store directory `dir` that process `pid` still holds open after they were
 * removed: no longer in the directory, still on the disk until closed. {count, bytes}.
 */
export async function removedButOpen(pid, dir) {
  const fs = await import('node:fs');
  let count = 0;
  let bytes = 0;
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (!target.startsWith(`${dir}/`) || !target.endsWith(' (deleted)')) continue;
      bytes += fs.statSync(`/proc/${pid}/fd/${fd}`).size;
      count++;
    } catch {
      // closed between the listing and the look
    }
  }
  return { count, bytes };
}
