// components/config/bootstrap.ts: the bootstrap layer's stack file.
import { strict as assert } from "node:assert";
import { validateBootstrapConfig } from "../../components/config/bootstrap";
import { StackConfigError } from "../../components/config/problems";
import { readStackFile } from "../harness";

describe("bootstrap layer validation", () => {
  const problemsOf = (change: (v: any) => void, secretKeys = new Set<string>()) => {
    const values: any = structuredClone(
      readStackFile("shared", "bootstrap", "talos-platform-bootstrap"),
    );
    change(values);
    try {
      validateBootstrapConfig(values, "bootstrap/Pulumi.shared.yaml", secretKeys);
      return [];
    } catch (error) {
      if (error instanceof StackConfigError) return error.problems;
      throw error;
    }
  };

  it("refuses the bootstrap credential in plain text, and a misspelt key", () => {
    assert.deepEqual(
      problemsOf((v) => {
        v.gcpCredentials = '{"type":"service_account"}';
        v.statebucket = v.stateBucket;
        delete v.stateBucket;
      }),
      [
        "talos-platform-bootstrap:statebucket: unknown key. Did you mean talos-platform-bootstrap:stateBucket?",
        "gcpCredentials: is a credential in plain text (value not shown). Run `pulumi config set --secret gcpCredentials --stack shared --cwd bootstrap` and enter it when asked, or leave it out for the CLI to supply (docs/credentials.md)",
        "stateBucket: required",
      ],
    );
    assert.deepEqual(
      problemsOf(() => undefined, new Set(["gcpCredentials"])),
      [],
    );
  });

  it("refuses ciMembers, and ci without secretsKeys or with a repository id that is not numeric", () => {
    const problems = problemsOf((v) => {
      v.ciMembers = ["serviceAccount:platform-ci@example-homelab.iam.gserviceaccount.com"];
      v.ci.repositoryId = "example/homelab";
      delete v.secretsKeys;
    });
    assert.equal(problems.length, 2, problems.join("\n"));
    assert.match(
      problems[0],
      /^ciMembers: refused: it gave CI object admin on the whole state bucket/,
    );
    assert.match(problems[1], /^ci\.repositoryId: expected the numeric id as a string/);
    assert.deepEqual(
      problemsOf((v) => delete v.secretsKeys),
      [
        "ci: needs talos-platform-bootstrap:secretsKeys: each CI identity may use its own environment's app key only",
      ],
    );
    assert.match(
      problemsOf((v) => (v.secretsKeys.environments = ["staging", "staging"])).join(),
      /secretsKeys\.environments: duplicate environment/,
    );
  });

  it("rejects a bad bucket name naming the bootstrap stack file", () => {
    assert.throws(
      () =>
        validateBootstrapConfig(
          { gcp: { project: "example-homelab", region: "x" }, stateBucket: { name: "Bad_Name" } },
          "bootstrap/Pulumi.shared.yaml",
        ),
      (e: Error) =>
        e.message ===
        'bootstrap/Pulumi.shared.yaml has 1 problem; nothing was created:\n  - stateBucket.name: expected a bucket name (3-63 lowercase letters, digits and dashes); got "Bad_Name"',
    );
  });
});
