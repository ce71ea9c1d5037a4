// A preflight's report: every check's verdict and the notes that do not fail it, printed one line
// per check, and the refusal (exit 3) that names every failed check when any failed.
import { ExitCode, UserError, formatProblem } from "../../errors";
import type { StepVerdict } from "../upgradePath";

/** The outcome of one check. */
export interface CheckResult {
  /** Stable identifier, e.g. `talos-path`. */
  readonly id: string;
  readonly status: "ok" | "failed" | "skipped";
  /** One line: what was found, or `<what>: <problem>; got <value>. <fix>` when it failed. */
  readonly detail: string;
}

/** Every check of one preflight, plus notes that do not fail it. */
export interface PreflightReport {
  readonly checks: readonly CheckResult[];
  readonly notes: readonly string[];
  readonly ok: boolean;
}

/** A report of these checks and notes; ok when none failed. */
export function report(
  checks: readonly CheckResult[],
  notes: readonly string[] = [],
): PreflightReport {
  return { checks, notes, ok: checks.every((check) => check.status !== "failed") };
}

/** A version rule's verdict as a check. */
export function fromVerdict(id: string, verdict: StepVerdict): CheckResult {
  return verdict.ok
    ? { id, status: "ok", detail: verdict.summary }
    : { id, status: "failed", detail: formatProblem(verdict.problem) };
}

const MARK = { ok: "ok  ", failed: "FAIL", skipped: "skip" } as const;

/** The report as printed: the title, one line per check, then the notes and the verdict. */
export function formatPreflight(title: string, result: PreflightReport): string {
  const width = Math.max(...result.checks.map((c) => c.id.length));
  const lines = [title];
  for (const check of result.checks) {
    lines.push(`  ${MARK[check.status]}  ${check.id.padEnd(width)}  ${check.detail}`);
  }
  for (const note of result.notes) lines.push(`  note: ${note}`);
  const failed = result.checks.filter((c) => c.status === "failed").length;
  lines.push(
    failed === 0
      ? "preflight passed"
      : `preflight failed: ${failed} ${failed === 1 ? "check" : "checks"} failed; nothing was changed`,
  );
  return `${lines.join("\n")}\n`;
}

/** A refused preflight: one message naming every failed check; exit code 3. */
class PreflightError extends UserError {
  constructor(
    readonly target: string,
    readonly failed: readonly CheckResult[],
  ) {
    const noun = failed.length === 1 ? "check" : "checks";
    const lines = failed.map((check) => `  - ${check.detail}`).join("\n");
    super(
      {
        what: `preflight ${target}`,
        problem: `${failed.length} ${noun} failed; nothing was changed`,
        got: lines,
        fix: "Fix each one and run it again",
      },
      ExitCode.refused,
    );
    // A list reads better than the one-line form: the same layout as a failed operation.
    this.message = `preflight ${target}: ${failed.length} ${noun} failed; nothing was changed; got:\n${lines}\nFix each one and run it again.`;
    this.name = "PreflightError";
  }
}

/** Throws the refusal of a report when any check failed. */
export function assertPreflight(target: string, result: PreflightReport): void {
  if (result.ok) return;
  throw new PreflightError(
    target,
    result.checks.filter((check) => check.status === "failed"),
  );
}
