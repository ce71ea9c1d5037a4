// components/config/talosSchema.ts and the schemas it reads (talosSchemas/): one schema per supported
// Talos minor, unchanged since it was fetched, and the same verdict as ajv (a general JSON-schema
// validator) on the same rules. How the patches rule words its issues: rules/patches.test.ts.
import Ajv2020 from "ajv/dist/2020";
import fc from "fast-check";
import { strict as assert } from "node:assert";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { validatePlatformConfig } from "../../components/config/validate";
import {
  SCHEMA_CORRECTIONS,
  schemasDir,
  shippedSchemas,
  TalosConfigSchema,
  talosConfigSchema,
} from "../../components/config/talosSchema";
import { clusterDocuments, ConfigDocument, nodeDocuments } from "../../components/talos/patches";
import { TALOS_RELEASES } from "../../components/talos/versions";
import { mixedCluster } from "../fixtures";

const MINORS = TALOS_RELEASES.map((release) => release.minor);

/**
 * ajv over the same rules the interpreter applies to a patch: nested `required` dropped (a patch is
 * partial), a document's own identity kept, string fields taking any scalar (Go's YAML decoder), and
 * the schema corrections.
 */
function ajvFor(minor: string) {
  const entry = shippedSchemas()[minor];
  const schema = JSON.parse(readFileSync(path.join(schemasDir(), entry.schema), "utf8"));
  const documentDefs = new Set(
    (schema.oneOf as { $ref: string }[]).map((ref) => ref.$ref.replace("#/$defs/", "")),
  );
  const relax = (node: any): any => {
    if (Array.isArray(node)) return node.map(relax);
    if (node === null || typeof node !== "object") return node;
    const copy: any = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === "required") continue;
      copy[key] =
        key === "properties" || key === "patternProperties" || key === "$defs"
          ? Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, relax(v)]))
          : relax(value);
    }
    if (copy.type === "string") copy.type = ["string", "number", "boolean"];
    return copy;
  };
  const defs: Record<string, any> = relax(schema.$defs);
  for (const name of documentDefs) {
    const required = (schema.$defs[name].required ?? []).filter((k: string) =>
      ["apiVersion", "kind", "name"].includes(k),
    );
    if (required.length > 0) defs[name].required = required;
  }
  for (const { def, property } of SCHEMA_CORRECTIONS) {
    const wrong = defs[def]?.properties?.[property];
    if (wrong?.type === "object") defs[def].properties[property] = { type: "array", items: wrong };
  }
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ $id: "talos", $defs: defs });
  const kinds = new Map<string, string>();
  for (const name of documentDefs) {
    kinds.set(schema.$defs[name].properties?.kind?.enum?.[0] ?? "v1alpha1", name);
  }
  return (document: Record<string, unknown>): boolean => {
    const def = kinds.get(typeof document.kind === "string" ? document.kind : "v1alpha1");
    if (!def) return false;
    return ajv.getSchema(`talos#/$defs/${def}`)!(document) as boolean;
  };
}

const spec = validatePlatformConfig(mixedCluster(), "Pulumi.test.yaml");
const INSTALLER = "factory.talos.dev/metal-installer/abc:v1.13.9";
const generated: ConfigDocument[] = [
  ...clusterDocuments(spec.cluster),
  ...spec.nodes.flatMap((node) => nodeDocuments(spec.cluster, node, INSTALLER)),
];

/** Documents written by hand: valid and invalid ones, of several kinds. */
const HANDWRITTEN: Record<string, unknown>[] = [
  { machine: { kubelet: { extraArgs: { "rotate-server-certificates": "true" } } } },
  { machine: { kubelet: { extraArg: {} } } },
  { machine: { sysctls: { "vm.nr_hugepages": 64 } } },
  { machine: { certSANs: "one" } },
  { machine: { install: { disk: "/dev/sda", wipe: "yes" } } },
  { machine: { acceptedCAs: [{ crt: "PEM" }] } },
  { cluster: { network: { cni: { name: "none" }, podSubnets: ["10.244.0.0/16"] } } },
  { cluster: { network: { cni: { name: "cilium" } } } },
  { cluster: { proxy: { disabled: true }, allowSchedulingOnControlPlanes: "yes" } },
  { apiVersion: "v1alpha1", kind: "LinkConfig", name: "net0", mtu: 9000 },
  { apiVersion: "v1alpha1", kind: "LinkConfig", name: "net0", mtu: "big" },
  { apiVersion: "v1alpha1", kind: "LinkConfig", mtu: 1500 },
  { apiVersion: "v1alpha1", kind: "HostnameConfig", hostname: "cp-1", auto: "off" },
  { apiVersion: "v1alpha1", kind: "HostnameConfig", hostname: "cp-1", color: "red" },
  { apiVersion: "v1alpha1", kind: "TimeSyncConfig", ntp: { servers: ["time.example.net"] } },
  { apiVersion: "v1alpha1", kind: "ResolverConfig", nameservers: [{ address: "192.0.2.1" }] },
  { apiVersion: "v1alpha2", kind: "ResolverConfig" },
  { apiVersion: "v1alpha1", kind: "Layer2VIPConfig", name: "192.0.2.10", link: "net0" },
  { apiVersion: "v1alpha1", kind: "UserVolumeConfig", name: "data", provisioning: { minSize: 1 } },
];

describe("shipped Talos config schemas", () => {
  it("has one schema for every Talos minor the program supports", () => {
    assert.deepEqual(Object.keys(shippedSchemas()).sort(), [...MINORS].sort());
    for (const minor of MINORS) {
      assert.match(
        shippedSchemas()[minor].version,
        new RegExp(`^v${minor.replace(".", "\\.")}\\.\\d+$`),
      );
    }
  });

  it("ships each schema exactly as fetched (the recorded SHA-256 matches)", () => {
    for (const entry of Object.values(shippedSchemas())) {
      const bytes = readFileSync(path.join(schemasDir(), entry.schema));
      assert.equal(createHash("sha256").update(bytes).digest("hex"), entry.sha256, entry.schema);
    }
  });

  it("knows each release's own document kinds and removed sections", () => {
    assert.ok(!talosConfigSchema("1.11")!.kinds.includes("LinkConfig"));
    assert.ok(talosConfigSchema("1.12")!.kinds.includes("LinkConfig"));
    assert.ok(talosConfigSchema("1.11")!.sectionKeys("machine").includes("network"));
    assert.ok(!talosConfigSchema("1.13")!.sectionKeys("machine").includes("network"));
    assert.equal(talosConfigSchema("1.9"), undefined);
  });

  it("refuses a schema that uses a keyword the interpreter does not implement", () => {
    const entry = { version: "v9.9.9", schema: "x.json", sha256: "", deprecated: {} };
    const schema = { $defs: { "v1alpha1.Config": { type: "object", allOf: [] } }, oneOf: [] };
    assert.throws(() => new TalosConfigSchema("9.9", entry, schema), /allOf/);
  });
});

describe("Talos patch documents against the schema", () => {
  for (const minor of ["1.12", "1.13"]) {
    it(`accepts every document the program itself generates (Talos ${minor})`, () => {
      const schema = talosConfigSchema(minor)!;
      for (const document of generated) assert.deepEqual(schema.validateDocument(document), []);
    });
  }

  it("gives the same verdict as ajv on hand-written documents, for every minor", () => {
    for (const minor of MINORS) {
      const ajv = ajvFor(minor);
      const schema = talosConfigSchema(minor)!;
      for (const document of [...HANDWRITTEN, ...generated]) {
        assert.equal(
          schema.validateDocument(document).length === 0,
          ajv(document),
          `Talos ${minor}: ${JSON.stringify(document)}`,
        );
      }
    }
  });

  it("gives the same verdict as ajv on mutated documents (property)", () => {
    const ajv = { "1.13": ajvFor("1.13"), "1.14": ajvFor("1.14") };
    const keys = [
      "machine",
      "cluster",
      "kubelet",
      "extraArgs",
      "mtu",
      "name",
      "bogus",
      "ntp",
      "network",
      "cni",
    ];
    const leaf = fc.oneof(
      fc.string({ maxLength: 5 }),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
    );
    const mutate = (document: unknown, path: number[], key: string, value: unknown): unknown => {
      if (document === null || typeof document !== "object" || Array.isArray(document))
        return value;
      const entries = Object.keys(document);
      if (path.length === 0 || entries.length === 0)
        return { ...(document as object), [key]: value };
      const target = entries[path[0] % entries.length];
      return {
        ...(document as object),
        [target]: mutate((document as any)[target], path.slice(1), key, value),
      };
    };
    fc.assert(
      fc.property(
        fc.constantFrom(...HANDWRITTEN, ...generated),
        fc.array(fc.nat(), { maxLength: 3 }),
        fc.constantFrom(...keys),
        fc.oneof(leaf, fc.dictionary(fc.constantFrom(...keys), leaf, { maxKeys: 2 })),
        fc.constantFrom("1.13", "1.14"),
        (document, path, key, value, minor) => {
          const changed = mutate(document, path, key, value) as Record<string, unknown>;
          // Only documents Talos would take as a config document are compared.
          fc.pre(typeof changed.kind === "string" || "machine" in changed || "cluster" in changed);
          assert.equal(
            talosConfigSchema(minor)!.validateDocument(changed).length === 0,
            ajv[minor as "1.13" | "1.14"](changed),
            JSON.stringify(changed),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});
