// Turns the raw `talos-platform:*` config values into a validated PlatformSpec, or throws one error
// listing every problem, before any resource exists. Three phases: parse (parse.ts), the rules
// (rules/), normalise (complete.ts, normalize.ts). Free of the Pulumi SDK: the CLI's `validate`
// runs it on stack files.
import type { PlatformSpec } from "../spec/types";
import { completeStack } from "./complete";
import { normalizeStack } from "./normalize";
import { parseStack, RawStackConfig } from "./parse";
import { Problems } from "./problems";
import { RULES } from "./rules";
import { exampleValues } from "./rules/examples";

/** A valid stack, and what is valid but worth knowing about it. */
export interface CheckedPlatformConfig {
  readonly spec: PlatformSpec;
  /** `<key>: <what>. <what to do>` lines, e.g. what the Talos the nodes run has deprecated. */
  readonly warnings: readonly string[];
}

/** What {@link checkPlatformConfig} checks beyond the rules. */
export interface CheckOptions {
  /**
   * Warn about example values left in the stack (documentation addresses and MACs): what `validate`
   * reports; the program, its tests and their fixtures use such values on purpose.
   */
  readonly exampleValues?: boolean;
}

/**
 * Validates the whole stack config. Every rule runs even when a section is broken, so the error lists
 * every problem at once. Pure: callable on a stack file's values (see `stackFileValues`).
 * @throws StackConfigError naming each offending key.
 */
export function checkPlatformConfig(
  raw: RawStackConfig,
  stackFile: string,
  options: CheckOptions = {},
): CheckedPlatformConfig {
  const parsed = parseStack(raw, stackFile);
  const problems = new Problems();
  for (const rule of RULES) rule(parsed, problems);
  if (options.exampleValues) exampleValues(parsed, problems);
  problems.throwIfAny(stackFile);
  return { spec: normalizeStack(completeStack(parsed)), warnings: problems.warnings };
}

/** {@link checkPlatformConfig} without the warnings. */
export function validatePlatformConfig(raw: RawStackConfig, stackFile: string): PlatformSpec {
  return checkPlatformConfig(raw, stackFile).spec;
}
