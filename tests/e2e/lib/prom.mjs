// promtool as the strict judge of an exposition.
import assert from 'node:assert/strict';

import { runCommand } from './proc.mjs';

export const PROMTOOL = '/usr/bin/promtool';

// promtool lints label names for snake_case; the spec's dimensions callType, callKind, rpcType,
// modelName, spanKind and usageType are camelCase by definition. The exposition must parse
// (exit 1 is a parse failure) and that lint must be the only finding.
const SPEC_CAMEL_CASE = "label names should be written in 'snake_case' not 'camelCase'";

/** Asserts `promtool check metrics` accepts `text`; returns its findings. */
export async function promtoolCheck(text) {
  const lint = await runCommand(PROMTOOL, ['check', 'metrics'], { input: text, timeoutMs: 10000 });
  const findings = (lint.stdout + lint.stderr).split('\n').filter((l) => l.trim());
  const other = findings.filter((l) => !l.endsWith(SPEC_CAMEL_CASE));
  assert.ok(
    lint.code === 0 || (lint.code === 3 && other.length === 0),
    `promtool check metrics (exit ${lint.code}):\n${other.join('\n')}\n--- scrape ---\n${text}`,
  );
  return findings;
}
