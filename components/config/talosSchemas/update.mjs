#!/usr/bin/env node
// Refreshes the Talos machine-config JSON schemas shipped in this folder, one per Talos minor the
// program supports, from the Go module that embeds them:
//   github.com/siderolabs/talos/pkg/machinery@<version> → config/schemas/config.schema.json
// It also records, per minor, the machine-config fields Talos still decodes but leaves out of the
// schema (`docgen:nodoc` in its Go types), with the `Deprecated:` note that says what replaces them,
// so a patch using one is told so rather than "unknown key".
//
// Usage (Go and the Go module proxy needed; nothing else is downloaded):
//   node components/config/talosSchemas/update.mjs
// Then commit the changed files. Pick the newest patch of each minor the proxy serves.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

const MODULE = "github.com/siderolabs/talos/pkg/machinery";
/** The newest patch of each supported minor (components/talos/versions.ts lists the minors). */
const VERSIONS = ["v1.10.6", "v1.11.6", "v1.12.4", "v1.13.9", "v1.14.1"];
const here = path.dirname(new URL(import.meta.url).pathname);

/** `go mod download -json` of one version; returns the module's extracted directory. */
function download(version) {
  const out = execFileSync("go", ["mod", "download", "-json", `${MODULE}@${version}`], {
    cwd: tmpdir(),
    env: { ...process.env, GOFLAGS: "-mod=mod" },
    encoding: "utf8",
  });
  const info = JSON.parse(out);
  if (info.Error) throw new Error(`${MODULE}@${version}: ${info.Error}`);
  return { dir: info.Dir, sum: info.Sum };
}

/**
 * `Deprecated:` notes on the fields of the v1alpha1 Go types, as { "v1alpha1.<Type>": { yamlKey: note } }.
 * A note is the comment text after `Deprecated:` up to the field it documents.
 */
function deprecations(typesDir) {
  const result = {};
  for (const file of readdirSync(typesDir).filter((f) => /^v1alpha1_.*\.go$/.test(f))) {
    if (file.endsWith("_test.go")) continue;
    let type;
    let comment = [];
    for (const line of readFileSync(path.join(typesDir, file), "utf8").split("\n")) {
      const start = /^type (\w+) struct \{/.exec(line);
      if (start) {
        type = start[1];
        comment = [];
        continue;
      }
      if (type === undefined) continue;
      if (/^\}/.test(line)) {
        type = undefined;
        continue;
      }
      const text = /^\s*\/\/\s?(.*)$/.exec(line);
      if (text) {
        comment.push(text[1]);
        continue;
      }
      const field = /`yaml:"([^",]+)[^"]*"/.exec(line);
      if (field) {
        const joined = comment.join(" ");
        const at = joined.indexOf("Deprecated:");
        // Fields Talos decodes but leaves out of its documentation and schema: deprecated ones
        // (with the note saying what replaces them) and other `docgen:nodoc` ones (note "").
        if (at >= 0 || joined.includes("docgen:nodoc")) {
          const note =
            at < 0
              ? ""
              : joined
                  .slice(at + "Deprecated:".length)
                  .replace(/\s+/g, " ")
                  .trim();
          (result[`v1alpha1.${type}`] ??= {})[field[1]] = note;
        }
      }
      comment = [];
    }
  }
  return result;
}

const manifest = {};
for (const version of VERSIONS) {
  const { dir, sum } = download(version);
  const minor = /^v(\d+\.\d+)\./.exec(version)[1];
  const file = `talos-${version}.schema.json`;
  copyFileSync(path.join(dir, "config", "schemas", "config.schema.json"), path.join(here, file));
  // The module cache is read-only; the copy should not be.
  chmodSync(path.join(here, file), 0o644);
  const sha256 = createHash("sha256")
    .update(readFileSync(path.join(here, file)))
    .digest("hex");
  manifest[minor] = {
    version,
    schema: file,
    sha256,
    moduleSum: sum,
    deprecated: deprecations(path.join(dir, "config", "types", "v1alpha1")),
  };
  console.log(`${version}: ${file} (${sha256.slice(0, 12)}…)`);
}
writeFileSync(path.join(here, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
