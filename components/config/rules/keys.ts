// Unknown keys at the top of a project's namespace (`talos-platform:dsn`), answered with the key that
// was probably meant. Values are never echoed: a misspelt credential key still holds a credential.
// checkTopLevelKeys is shared with the app and bootstrap layers.
import { FOUNDATION_KEYS } from "../keys";
import { closestKey, Problems } from "../problems";
import type { Rule } from "./rule";

/** Records every key of `presentKeys` that is not in `knownKeys`, named with its namespace. */
export function checkTopLevelKeys(
  project: string,
  presentKeys: ReadonlySet<string>,
  knownKeys: readonly string[],
  problems: Problems,
): void {
  for (const key of [...presentKeys].sort()) {
    if (knownKeys.includes(key)) continue;
    const meant = closestKey(key, knownKeys);
    problems.add([`${project}:${key}`], "unknown key", {
      hint: meant
        ? `Did you mean ${project}:${meant}?`
        : `Known keys: ${[...knownKeys].sort().join(", ")}`,
    });
  }
}

/** The foundation's namespace holds only the keys it knows. */
export const unknownKeys: Rule = ({ project, presentKeys }, problems) =>
  checkTopLevelKeys(project, presentKeys, FOUNDATION_KEYS, problems);
