import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { UserError } from "../../automation/errors";
import { isKmsSecretsProvider } from "../../automation/backend";
import { keepLayout, removeConfigKeys } from "../../automation/stackFileRepair";
import * as prettier from "prettier";
import { parse, stringify } from "yaml";
import { ROOT } from "./helpers";

const LEFT = [
  "# prod: the operator's comments stay",
  "secretsprovider: gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k",
  "encryptedkey: CiQAkey==",
  "config:",
  "  # the cluster",
  "  talos-platform:cluster: { name: prod }",
  "  talos-platform:proxmoxApiToken:",
  "    secure: v1:leftover",
  "  talos-platform:dns: { zone: example }",
  "",
].join("\n");

describe("cleaning a stack file", () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "stack-file-"));
    file = path.join(dir, "Pulumi.prod.yaml");
    fs.writeFileSync(file, LEFT, { mode: 0o640 });
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("removes only the given config keys, keeping comments, Pulumi's keys and the file's mode", () => {
    fs.writeFileSync(file, LEFT.replace("{ name: prod }", "{ name: prod, vips: [192.0.2.1] }"), {
      mode: 0o640,
    });
    assert.deepEqual(removeConfigKeys(file, ["talos-platform:proxmoxApiToken", "x:absent"]), [
      "talos-platform:proxmoxApiToken",
    ]);
    assert.equal(
      fs.readFileSync(file, "utf8"),
      LEFT.replace("  talos-platform:proxmoxApiToken:\n    secure: v1:leftover\n", "").replace(
        "{ name: prod }",
        "{ name: prod, vips: [192.0.2.1] }",
      ),
    );
    assert.equal(fs.statSync(file).mode & 0o777, 0o640);
    assert.deepEqual(fs.readdirSync(dir), ["Pulumi.prod.yaml"], "no temporary file left");
  });

  it("never overwrites an edit made while it was cleaning", () => {
    // The module object itself (an `import *` namespace only has getters onto it).
    const nodeFs = createRequire(__filename)("node:fs") as { readFileSync: typeof fs.readFileSync };
    const original = nodeFs.readFileSync;
    let reads = 0;
    // Someone saves the file between the CLI's read and its rename.
    nodeFs.readFileSync = ((...args: never[]) => {
      const result = (original as (...a: never[]) => unknown)(...args);
      if (args[0] === file && ++reads === 1) fs.appendFileSync(file, "  talos-platform:new: 1\n");
      return result;
    }) as typeof fs.readFileSync;
    try {
      assert.throws(
        () => removeConfigKeys(file, ["talos-platform:proxmoxApiToken"]),
        (error: UserError) =>
          error.message ===
          "Pulumi.prod.yaml: changed while the CLI was removing credentials from it, so it was left alone; got keys talos-platform:proxmoxApiToken. Rerun the command",
      );
    } finally {
      nodeFs.readFileSync = original;
    }
    assert.equal(fs.readFileSync(file, "utf8"), `${LEFT}  talos-platform:new: 1\n`);
    assert.deepEqual(fs.readdirSync(dir), ["Pulumi.prod.yaml"], "no temporary file left");
  });

  it("puts the operator's layout back when the engine re-serialised the file only to add its keys", () => {
    const before = LEFT.replace("encryptedkey: CiQAkey==\n", "");
    fs.writeFileSync(file, before);
    // What workspace.ProjectStack.Save writes: the parsed file, comments gone, plus the key.
    fs.writeFileSync(file, stringify({ ...parse(before), encryptedkey: "CiQAnew==" }));
    assert.equal(keepLayout(file, before), "kept");
    assert.equal(
      fs.readFileSync(file, "utf8"),
      before.replace(/^(secretsprovider: .*\n)/m, "$1encryptedkey: CiQAnew==\n"),
    );
    assert.equal(keepLayout(file, fs.readFileSync(file, "utf8")), "unchanged");
  });

  it("keeps every byte of the repository's stack files but the engine's new line, in Prettier's layout", async () => {
    const files = [
      "Pulumi.staging.yaml",
      "Pulumi.prod.yaml",
      "bootstrap/Pulumi.shared.yaml",
      ...fs
        .readdirSync(path.join(ROOT, "examples"))
        .filter((name) => /^Pulumi\..+\.yaml$/.test(name))
        .map((name) => `examples/${name}`),
    ];
    const options = (await prettier.resolveConfig(path.join(ROOT, "examples", "x.yaml"))) ?? {};
    for (const name of files) {
      const before = fs.readFileSync(path.join(ROOT, name), "utf8");
      const values = parse(before) as Record<string, unknown>;
      const key = values.secretsprovider === undefined ? "encryptionsalt" : "encryptedkey";
      const value = key === "encryptedkey" ? "CiQAnew+/key==" : "v1:c2FsdA==:v1:abc:def";
      // The engine's whole-file rewrite, flow collections padded and long lines folded.
      fs.writeFileSync(file, stringify({ ...values, [key]: value }));
      assert.equal(keepLayout(file, before), "kept", name);
      const kept = fs.readFileSync(file, "utf8");
      const added = kept.split("\n").filter((line) => !before.split("\n").includes(line));
      assert.deepEqual(added, [`${key}: ${value}`], name);
      assert.equal(kept.replace(`${key}: ${value}\n`, ""), before, name);
      assert.deepEqual(parse(kept), { ...values, [key]: value }, name);
      assert.ok(
        await prettier.check(kept, { ...options, filepath: path.join(ROOT, name) }),
        `${name} after the run passes prettier --check`,
      );
    }
  });

  it("replaces or drops an existing key on its own line", () => {
    const before = [
      "# top",
      'secretsprovider: "passphrase" # kept as written',
      "encryptionsalt: v1:old # the salt",
      "config:",
      "  talos-platform:cluster: { name: dev, vip: [192.0.2.1] }",
      "",
    ].join("\n");
    fs.writeFileSync(file, stringify({ ...parse(before), encryptionsalt: "v1:new" }));
    assert.equal(keepLayout(file, before), "kept");
    assert.equal(fs.readFileSync(file, "utf8"), before.replace("v1:old # the salt", "v1:new"));
    fs.writeFileSync(
      file,
      stringify({ secretsprovider: "passphrase", config: parse(before).config }),
    );
    assert.equal(keepLayout(file, before), "kept");
    assert.equal(fs.readFileSync(file, "utf8"), before.replace(/^encryptionsalt.*\n/m, ""));
  });

  it("leaves stack files of the layers to the Pulumi CLI's layout: Prettier ignores them", async () => {
    const ignorePath = path.join(ROOT, ".prettierignore");
    for (const name of [
      "Pulumi.staging.yaml",
      "Pulumi.dev.yaml",
      "bootstrap/Pulumi.shared.yaml",
      "app/Pulumi.prod.yaml",
    ]) {
      const info = await prettier.getFileInfo(path.join(ROOT, name), { ignorePath });
      assert.equal(info.ignored, true, name);
    }
    for (const name of ["Pulumi.yaml", "examples/Pulumi.proxmox-vm.yaml"]) {
      const info = await prettier.getFileInfo(path.join(ROOT, name), { ignorePath });
      assert.equal(info.ignored, false, name);
    }
  });

  it("leaves the engine's file alone when anything else changed during the run", () => {
    const before = fs.readFileSync(file, "utf8");
    const engine = stringify({ ...parse(before), config: { "talos-platform:dns": { zone: "x" } } });
    fs.writeFileSync(file, engine);
    assert.equal(keepLayout(file, before), "rewritten");
    assert.equal(fs.readFileSync(file, "utf8"), engine);
  });

  it("knows which secrets providers keep a data key in encryptedkey", () => {
    for (const provider of [
      "gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k",
      "awskms://alias/x",
      "azurekeyvault://v.vault.azure.net/keys/k",
      "hashivault://transit/k",
    ]) {
      assert.equal(isKmsSecretsProvider(provider), true, provider);
    }
    for (const provider of ["passphrase", "default", undefined]) {
      assert.equal(isKmsSecretsProvider(provider), false, String(provider));
    }
  });
});
