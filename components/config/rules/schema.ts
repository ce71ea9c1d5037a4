// What the sections' schemas (schema.ts) refused, worded: a required section left out, a value of the
// wrong shape, an unknown key answered with the key that was probably meant at that level (or, for a
// top-level key written inside a section, where it belongs).
import { z } from "zod";
import { FOUNDATION_SETTINGS_KEYS } from "../keys";
import {
  closestKey,
  type KeyPath,
  keyOf,
  once,
  propertyNames,
  UnknownKeyAdvice,
} from "../problems";
import {
  clusterSchema,
  dnsSchema,
  etcdBackupsSchema,
  fluxSchema,
  gcpSchema,
  nodeSchema,
  ociSchema,
  openbaoSchema,
  openstackSchema,
  proxmoxSchema,
} from "../schema";
import type { Rule } from "./rule";

type JsonSchema = Readonly<Record<string, unknown>>;

const SECTION_SCHEMAS = {
  cluster: clusterSchema,
  nodes: nodeSchema,
  proxmox: proxmoxSchema,
  oci: ociSchema,
  openstack: openstackSchema,
  gcp: gcpSchema,
  openbao: openbaoSchema,
  dns: dnsSchema,
  flux: fluxSchema,
  etcdBackups: etcdBackupsSchema,
} as const;

/** Each section's JSON schema (a node's for `nodes`), computed when a stack has an unknown key. */
const jsonSchemas = (() => {
  let value: Record<string, JsonSchema> | undefined;
  return () =>
    (value ??= Object.fromEntries(
      Object.entries(SECTION_SCHEMAS).map(([key, schema]) => [
        key,
        z.toJSONSchema(schema, { unrepresentable: "any" }) as JsonSchema,
      ]),
    ));
})();

/** Every key the sections know, for "is not a setting here". */
const knownKeys = once(() =>
  Object.values(jsonSchemas()).flatMap((schema) => [...propertyNames(schema)]),
);

const isMapping = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** The alternatives of a union that fit `value` by their constants (a node's platform), else all. */
function branches(schema: unknown, value: unknown): JsonSchema[] {
  if (!isMapping(schema)) return [];
  const alternatives = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined;
  if (!Array.isArray(alternatives)) return [schema];
  const all = alternatives.flatMap((alternative) => branches(alternative, value));
  const fitting = all.filter((branch) =>
    Object.entries(isMapping(branch.properties) ? branch.properties : {}).every(
      ([key, property]) =>
        !isMapping(property) ||
        !("const" in property) ||
        (isMapping(value) && value[key] === property.const),
    ),
  );
  return fitting.length > 0 ? fitting : all;
}

/** The keys valid in the mapping at `path` of `value`, which `schema` describes. */
function keysAt(schema: JsonSchema, value: unknown, path: KeyPath): string[] {
  let schemas = branches(schema, value);
  let current = value;
  for (const part of path) {
    const next =
      isMapping(current) || Array.isArray(current) ? (current as never)[part] : undefined;
    schemas = schemas.flatMap((s) => {
      if (typeof part === "number") return branches(s.items, next);
      if (isMapping(s.properties) && part in s.properties)
        return branches(s.properties[part], next);
      return isMapping(s.additionalProperties) ? branches(s.additionalProperties, next) : [];
    });
    current = next;
  }
  return [
    ...new Set(schemas.flatMap((s) => (isMapping(s.properties) ? Object.keys(s.properties) : []))),
  ];
}

/**
 * Advice on an unknown key, from the keys valid where it was written: the one probably meant there,
 * else where a top-level key belongs, else that it is another section's or platform's setting.
 */
function adviceFor(project: string, base: KeyPath, value: unknown): UnknownKeyAdvice {
  const section = String(base[0]) as keyof typeof SECTION_SCHEMAS;
  return (path, key) => {
    const schema = jsonSchemas()[section];
    if (!schema) return undefined;
    const meant = closestKey(key, keysAt(schema, value, path));
    if (meant) return { problem: "unknown key", hint: `Did you mean ${meant}?` };
    if ((FOUNDATION_SETTINGS_KEYS as readonly string[]).includes(key)) {
      return {
        problem: "is a top-level key, not a setting here",
        hint: `Move it out of ${keyOf([...base, ...path])} to the top of the stack file's config, as ${project}:${key}`,
      };
    }
    if (knownKeys().includes(key)) {
      return { problem: "is not a setting here", hint: "See docs/configuration.md" };
    }
    return { problem: "unknown key", hint: "See docs/configuration.md" };
  };
}

/** Each section and node the schema refused, in stack-file order. */
export const sectionSchemas: Rule = ({ project, schemaProblems }, problems) => {
  for (const problem of schemaProblems) {
    if (problem.kind === "missing") {
      problems.add([problem.key], "required", {
        hint: "See docs/configuration.md and Pulumi.staging.yaml",
      });
    } else {
      problems.addZodIssues(
        problem.key,
        problem.value,
        problem.issues,
        knownKeys(),
        "docs/configuration.md",
        adviceFor(project, problem.key, problem.value),
      );
    }
  }
};
