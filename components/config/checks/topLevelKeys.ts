// Unknown keys at the top of a project's namespace (`talos-platform:dsn`), answered with the key that
// was probably meant, as unknown keys inside the sections are. Values are never echoed: a misspelt
// credential key still holds a credential.
import { closestKey, Problems } from "../problems";

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
