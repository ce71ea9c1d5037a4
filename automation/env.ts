// The process environment as every command sees it, and whether it runs in CI: below every module
// that reads either, so none of them imports another for it.

/** Environment variables as the process sees them. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Whether the process runs in CI: `CI` set to anything but empty, `0` or `false`. */
export function isCi(env: Env): boolean {
  const value = env.CI;
  return value !== undefined && value !== "" && value !== "0" && value.toLowerCase() !== "false";
}
