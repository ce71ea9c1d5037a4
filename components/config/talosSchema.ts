// Talos machine-config documents checked against the JSON schema Talos publishes for each release
// (shipped in ./talosSchemas, see its README). Pure: reads only files of this repository.
// It interprets the small part of JSON Schema those schemas use (SUPPORTED below) rather than running
// a general validator; a test checks that it agrees with ajv, and a schema using any other keyword
// fails to load.
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { REPO_ROOT } from "../repo/root";
import { closestKey } from "./problems";

/** A JSON-schema node. */
type SchemaNode = Readonly<Record<string, unknown>>;

/** One place inside a document: keys and list indexes. */
export type DocumentPath = readonly (string | number)[];

/** Why a document does not fit the schema, for the caller to word. */
export type TalosSchemaIssue =
  | {
      readonly kind: "unknownKey";
      readonly path: DocumentPath;
      /** A known key at the same place that is close in spelling. */
      readonly suggestion?: string;
      /**
       * Talos still reads this key but left it out of its documentation and schema; when it also
       * deprecated it, this is the Go note saying what replaces it (else "").
       */
      readonly deprecated?: string;
    }
  | {
      readonly kind: "type";
      readonly path: DocumentPath;
      readonly expected: readonly string[];
      readonly got: unknown;
    }
  | {
      readonly kind: "enum";
      readonly path: DocumentPath;
      readonly allowed: readonly unknown[];
      readonly got: unknown;
    }
  | {
      readonly kind: "pattern";
      readonly path: DocumentPath;
      readonly pattern: string;
      readonly got: unknown;
    }
  | {
      readonly kind: "range";
      readonly path: DocumentPath;
      readonly bound: string;
      readonly got: unknown;
    }
  | { readonly kind: "required"; readonly path: DocumentPath }
  | {
      readonly kind: "unknownKind";
      readonly path: DocumentPath;
      readonly got: string;
      readonly suggestion?: string;
    }
  | { readonly kind: "noKind"; readonly path: DocumentPath };

/** Keywords that constrain values; anything else in a schema must be an annotation. */
const SUPPORTED = new Set([
  "$ref",
  "type",
  "properties",
  "patternProperties",
  "additionalProperties",
  "items",
  "enum",
  "pattern",
  "oneOf",
  "required",
  "minimum",
  "maximum",
  "minItems",
]);
/** Keywords that only describe. `format: uri` is one too: Talos itself does not check it. */
const ANNOTATIONS = new Set([
  "$schema",
  "$id",
  "$defs",
  "title",
  "description",
  "markdownDescription",
  "x-intellij-html-description",
  "format",
  "default",
  "examples",
]);

/**
 * Where Talos' published schema disagrees with the Go types Talos decodes with. `acceptedCAs` is a
 * list of certificates (`[]*x509.PEMEncodedCertificate` in config/types/v1alpha1/v1alpha1_types.go)
 * but the schema describes one certificate. Each correction turns the named property into a list of
 * what the schema describes, when the schema still has it wrong.
 */
export const SCHEMA_CORRECTIONS: readonly { readonly def: string; readonly property: string }[] = [
  { def: "v1alpha1.MachineConfig", property: "acceptedCAs" },
  { def: "v1alpha1.ClusterConfig", property: "acceptedCAs" },
];

/** Keys that make a document without `kind` a v1alpha1 machine config (Talos' own rule). */
const V1ALPHA1_KEYS = ["version", "machine", "cluster", "debug", "persist"];

/** What the manifest records for one Talos minor. */
interface ManifestEntry {
  readonly version: string;
  readonly schema: string;
  readonly sha256: string;
  readonly deprecated: Readonly<Record<string, Readonly<Record<string, string>>>>;
}

/** The folder of the shipped schemas (not compiled: the same for sources and dist/). */
export function schemasDir(): string {
  return path.join(REPO_ROOT, "components", "config", "talosSchemas");
}

let manifest: Readonly<Record<string, ManifestEntry>> | undefined;

/** The shipped schemas by Talos minor (`1.13` → v1.13.9's schema). */
export function shippedSchemas(): Readonly<Record<string, ManifestEntry>> {
  manifest ??= JSON.parse(readFileSync(path.join(schemasDir(), "manifest.json"), "utf8")) as Record<
    string,
    ManifestEntry
  >;
  return manifest;
}

/** The machine-config schema of one Talos release, read and indexed once. */
export class TalosConfigSchema {
  /** `v1.13.9`. */
  readonly version: string;
  private readonly defs: Readonly<Record<string, SchemaNode>>;
  /** Definition name by document kind; `v1alpha1` for the machine config itself. */
  private readonly kindDefs = new Map<string, string>();
  private readonly deprecated: ManifestEntry["deprecated"];
  private readonly patterns = new Map<string, RegExp>();

  constructor(
    readonly minor: string,
    entry: ManifestEntry,
    schema: SchemaNode,
  ) {
    this.version = entry.version;
    this.deprecated = entry.deprecated;
    this.defs = corrected((schema.$defs ?? {}) as Record<string, SchemaNode>);
    assertSupported(schema, entry.schema);
    for (const ref of (schema.oneOf ?? []) as SchemaNode[]) {
      const name = defName(ref.$ref as string);
      const kind = ((this.defs[name]?.properties as any)?.kind?.enum as string[] | undefined)?.[0];
      this.kindDefs.set(kind ?? "v1alpha1", name);
    }
  }

  /** Every document kind this release knows (without the v1alpha1 machine config). */
  get kinds(): string[] {
    return [...this.kindDefs.keys()].filter((kind) => kind !== "v1alpha1").sort();
  }

  /** Every key the v1alpha1 `machine` or `cluster` section knows, e.g. to tell a removed one. */
  sectionKeys(section: "machine" | "cluster"): readonly string[] {
    const config = this.defs[this.kindDefs.get("v1alpha1")!];
    const ref = ((config.properties as any)?.[section]?.$ref ?? "") as string;
    return Object.keys((this.defs[defName(ref)]?.properties ?? {}) as object);
  }

  /**
   * Checks one document of a strategic-merge patch: a v1alpha1 fragment (no `kind`) or a whole
   * document of a known kind. A patch is partial, so nested `required` keys are not demanded; a kind's
   * own identity (`apiVersion`, `kind`, `name`) is.
   */
  validateDocument(document: Readonly<Record<string, unknown>>): TalosSchemaIssue[] {
    const issues: TalosSchemaIssue[] = [];
    const kind = document.kind;
    if (kind === undefined) {
      if (!V1ALPHA1_KEYS.some((key) => key in document)) return [{ kind: "noKind", path: [] }];
      const name = this.kindDefs.get("v1alpha1")!;
      this.check(this.defs[name], document, [], name, issues);
      return issues;
    }
    const name = typeof kind === "string" ? this.kindDefs.get(kind) : undefined;
    if (name === undefined || kind === "v1alpha1") {
      return [
        {
          kind: "unknownKind",
          path: ["kind"],
          got: String(kind),
          suggestion: closestKey(String(kind), this.kinds),
        },
      ];
    }
    const def = this.defs[name];
    for (const key of ((def.required ?? []) as string[]).filter((k) =>
      ["apiVersion", "kind", "name"].includes(k),
    )) {
      if (!(key in document)) issues.push({ kind: "required", path: [key] });
    }
    this.check(def, document, [], name, issues);
    return issues;
  }

  private check(
    node: SchemaNode,
    value: unknown,
    at: DocumentPath,
    def: string,
    issues: TalosSchemaIssue[],
  ): void {
    if (typeof node.$ref === "string") {
      const name = defName(node.$ref);
      this.check(this.defs[name], value, at, name, issues);
    }
    if (Array.isArray(node.oneOf)) {
      const fits = (node.oneOf as SchemaNode[]).filter((option) => {
        const trial: TalosSchemaIssue[] = [];
        this.check(option, value, at, def, trial);
        return trial.length === 0;
      });
      if (fits.length !== 1) {
        const expected = (node.oneOf as SchemaNode[]).map((o) => String(o.type ?? "value"));
        issues.push({ kind: "type", path: at, expected, got: value });
        return;
      }
    }
    if (typeof node.type === "string" && !hasType(value, node.type)) {
      issues.push({ kind: "type", path: at, expected: [node.type], got: value });
      return;
    }
    if (Array.isArray(node.enum) && !node.enum.some((allowed) => allowed === value)) {
      issues.push({ kind: "enum", path: at, allowed: node.enum, got: value });
    }
    if (
      typeof node.pattern === "string" &&
      typeof value === "string" &&
      !this.regex(node.pattern).test(value)
    ) {
      issues.push({ kind: "pattern", path: at, pattern: node.pattern, got: value });
    }
    if (typeof value === "number") {
      if (typeof node.minimum === "number" && value < node.minimum)
        issues.push({ kind: "range", path: at, bound: `at least ${node.minimum}`, got: value });
      if (typeof node.maximum === "number" && value > node.maximum)
        issues.push({ kind: "range", path: at, bound: `at most ${node.maximum}`, got: value });
    }
    if (Array.isArray(value)) {
      if (typeof node.minItems === "number" && value.length < node.minItems)
        issues.push({
          kind: "range",
          path: at,
          bound: `at least ${node.minItems} entries`,
          got: value,
        });
      if (node.items && typeof node.items === "object") {
        value.forEach((item, i) =>
          this.check(node.items as SchemaNode, item, [...at, i], def, issues),
        );
      }
    } else if (isMapping(value)) {
      this.checkMapping(node, value, at, def, issues);
    }
  }

  private checkMapping(
    node: SchemaNode,
    value: Readonly<Record<string, unknown>>,
    at: DocumentPath,
    def: string,
    issues: TalosSchemaIssue[],
  ): void {
    const properties = (node.properties ?? {}) as Record<string, SchemaNode>;
    const patterns = Object.entries((node.patternProperties ?? {}) as Record<string, SchemaNode>);
    const constrained =
      node.properties !== undefined ||
      node.patternProperties !== undefined ||
      node.additionalProperties !== undefined;
    if (!constrained) return;
    for (const [key, item] of Object.entries(value)) {
      if (key in properties) {
        this.check(properties[key], item, [...at, key], def, issues);
        continue;
      }
      const matching = patterns.filter(([pattern]) => this.regex(pattern).test(key));
      if (matching.length > 0) {
        for (const [, schema] of matching) this.check(schema, item, [...at, key], def, issues);
      } else if (node.additionalProperties === false) {
        const deprecated = this.deprecated[def]?.[key];
        issues.push({
          kind: "unknownKey",
          path: [...at, key],
          ...(deprecated !== undefined
            ? { deprecated }
            : { suggestion: closestKey(key, Object.keys(properties)) }),
        });
      } else if (node.additionalProperties && typeof node.additionalProperties === "object") {
        this.check(node.additionalProperties as SchemaNode, item, [...at, key], def, issues);
      }
    }
  }

  private regex(pattern: string): RegExp {
    let regex = this.patterns.get(pattern);
    if (!regex) {
      regex = new RegExp(pattern, "u");
      this.patterns.set(pattern, regex);
    }
    return regex;
  }
}

const loaded = new Map<string, TalosConfigSchema>();

/** The schema of a Talos minor (`1.13`), read on first use; undefined when none is shipped. */
export function talosConfigSchema(minor: string): TalosConfigSchema | undefined {
  const cached = loaded.get(minor);
  if (cached) return cached;
  const entry = shippedSchemas()[minor];
  if (!entry) return undefined;
  const schema = JSON.parse(
    readFileSync(path.join(schemasDir(), entry.schema), "utf8"),
  ) as SchemaNode;
  const parsed = new TalosConfigSchema(minor, entry, schema);
  loaded.set(minor, parsed);
  return parsed;
}

/** The definitions with SCHEMA_CORRECTIONS applied (copies; the parsed schema is not changed). */
function corrected(defs: Record<string, SchemaNode>): Record<string, SchemaNode> {
  const result = { ...defs };
  for (const { def, property } of SCHEMA_CORRECTIONS) {
    const properties = result[def]?.properties as Record<string, SchemaNode> | undefined;
    const wrong = properties?.[property];
    if (!wrong || wrong.type !== "object") continue;
    result[def] = {
      ...result[def],
      properties: { ...properties, [property]: { type: "array", items: wrong } },
    };
  }
  return result;
}

function defName(ref: string): string {
  const match = /^#\/\$defs\/(.+)$/.exec(ref);
  if (!match) throw new Error(`unsupported schema reference ${ref}`);
  return match[1];
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * JSON-schema types, as Talos decodes YAML: a field of type string takes any scalar, because Go's YAML
 * decoder stores a number's or boolean's text in a string field; the other types are strict.
 */
function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case "string":
      return typeof value === "string" || typeof value === "number" || typeof value === "boolean";
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "number":
      return typeof value === "number";
    case "boolean":
      return typeof value === "boolean";
    case "object":
      return isMapping(value);
    case "array":
      return Array.isArray(value);
    case "null":
      return value === null;
    default:
      throw new Error(`unsupported schema type ${type}`);
  }
}

/** Fails when a schema uses a keyword this interpreter does not implement. */
function assertSupported(schema: unknown, file: string, at = "#"): void {
  if (Array.isArray(schema)) {
    schema.forEach((item, i) => assertSupported(item, file, `${at}/${i}`));
    return;
  }
  if (!isMapping(schema)) return;
  for (const [keyword, value] of Object.entries(schema)) {
    if (!SUPPORTED.has(keyword) && !ANNOTATIONS.has(keyword)) {
      throw new Error(
        `${file}: ${at} uses the JSON-schema keyword ${keyword}, which talosSchema.ts does not implement`,
      );
    }
    if (keyword === "properties" || keyword === "patternProperties" || keyword === "$defs") {
      for (const [name, child] of Object.entries(value as object))
        assertSupported(child, file, `${at}/${keyword}/${name}`);
    } else if (keyword === "items" || keyword === "additionalProperties" || keyword === "oneOf") {
      assertSupported(value, file, `${at}/${keyword}`);
    }
  }
}
