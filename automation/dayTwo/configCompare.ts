// Comparing two machine configs as data, not text: every YAML document is parsed, keyed by what it
// is (the v1alpha1 document, or kind and name), and compared as canonical JSON, so comments, key
// order, quoting and document order are not drift. Only the paths that differ are reported, never
// the values: configs hold the cluster's keys.
import { parseAllDocuments } from "yaml";

/** A config's documents by identity. */
type ConfigDocuments = Map<string, unknown>;

/**
 * Parses every document of a machine config, keyed `v1alpha1`, `<kind>/<name>` or `<kind>`; throws
 * on invalid YAML.
 */
export function configDocuments(text: string): ConfigDocuments {
  const docs = parseAllDocuments(text);
  const list = Array.isArray(docs) ? docs : [docs];
  const byKey: ConfigDocuments = new Map();
  for (const doc of list) {
    if (doc.errors.length > 0)
      throw new Error(`invalid YAML: ${doc.errors[0].message.split("\n")[0]}`);
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) continue;
    let key = documentKey(value);
    for (let n = 2; byKey.has(key); n++) key = `${documentKey(value)}#${n}`;
    byKey.set(key, value);
  }
  return byKey;
}

function documentKey(value: unknown): string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "(document)";
  const doc = value as Record<string, unknown>;
  if (doc.version === "v1alpha1" && ("machine" in doc || "cluster" in doc)) return "v1alpha1";
  const kind = typeof doc.kind === "string" ? doc.kind : "(no kind)";
  return typeof doc.name === "string" ? `${kind}/${doc.name}` : kind;
}

/** JSON with sorted keys: equal data gives equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

function differingPaths(a: unknown, b: unknown, prefix: string, out: string[]): void {
  if (canonicalJson(a) === canonicalJson(b)) return;
  const isMap = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v);
  if (isMap(a) && isMap(b)) {
    const x = a as Record<string, unknown>;
    const y = b as Record<string, unknown>;
    for (const key of [...new Set([...Object.keys(x), ...Object.keys(y)])].sort()) {
      differingPaths(x[key], y[key], prefix ? `${prefix}.${key}` : key, out);
    }
    return;
  }
  out.push(prefix || "(whole document)");
}

/**
 * The paths at which two configs differ (`v1alpha1: machine.install.image`, `+ HostnameConfig`
 * for a document only the node has, `- …` for one only the stack has); empty when they are equal.
 */
export function configDifferences(expected: string, actual: string): string[] {
  const want = configDocuments(expected);
  const have = configDocuments(actual);
  const paths: string[] = [];
  for (const key of [...new Set([...want.keys(), ...have.keys()])].sort()) {
    if (!have.has(key)) paths.push(`- ${key} (only in the stack)`);
    else if (!want.has(key)) paths.push(`+ ${key} (only on the node)`);
    else {
      const inner: string[] = [];
      differingPaths(want.get(key), have.get(key), "", inner);
      paths.push(...inner.map((p) => `${key}: ${p}`));
    }
  }
  return paths;
}
