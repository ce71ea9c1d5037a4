// components/config/rules/credentials.ts: credentials only as secrets, never inside a URL.
import { strict as assert } from "node:assert";
import { itRefuses, problemsOf, proxmoxCluster, RuleCase } from "../../fixtures";
import { itRefusesMutations } from "../arbitraryStack";

const cases: RuleCase[] = [
  {
    rule: "a credential in plain text",
    base: proxmoxCluster,
    broken: (v) => (v.proxmoxApiToken = "root@pam!pulumi=FAKE-SECRET-token"),
    problems: [
      "proxmoxApiToken: is a credential in plain text (value not shown). Run `pulumi config set --secret proxmoxApiToken --stack test` and enter it when asked, or leave it out for the CLI to supply (docs/credentials.md)",
    ],
  },
  {
    rule: "a Proxmox API URL with a user and password inside",
    base: proxmoxCluster,
    broken: (v) => (v.proxmox.endpoint = "https://root:FAKE-SECRET@pve1.example.net:8006/"),
    problems: [
      'proxmox.endpoint: carries a credential (a user:password), which would be stored in plain text; got "https://***:***@pve1.example.net:8006/". The API token goes in the proxmoxApiToken secret (docs/credentials.md)',
    ],
    valid: (v) => (v.proxmox.endpoint = "https://pve1.example.net:8006/"),
  },
];

describe("rules: credentials", () => {
  itRefuses(cases);

  it("accepts the same credential as a secret", () => {
    assert.deepEqual(
      problemsOf(proxmoxCluster, () => undefined, new Set(["proxmoxApiToken"])),
      [],
    );
  });

  itRefusesMutations({
    "a credential in plain text": (v) => {
      v.presentKeys.add("ociPrivateKey");
      return "ociPrivateKey";
    },
  });
});
