// components/config/app.ts: the app layer's stack file, its policy and dashboard files, and the
// references between them.
import { strict as assert } from "node:assert";
import { validateAppConfig } from "../../components/config/app";
import { StackConfigError } from "../../components/config/problems";
import { readStackFile } from "../harness";

describe("app layer validation", () => {
  const appValues = () =>
    structuredClone(readStackFile("staging", "app", "talos-platform-app")) as any;
  const problemsOf = (
    change: (v: any) => void,
    secretKeys: ReadonlySet<string> = new Set(["openbaoToken", "grafanaAuth"]),
  ): readonly string[] => {
    const values = appValues();
    change(values);
    try {
      validateAppConfig(values, "staging", secretKeys);
      return [];
    } catch (error) {
      if (error instanceof StackConfigError) return error.problems;
      throw error;
    }
  };

  it("refuses an app credential in plain text with the command that stores it encrypted", () => {
    assert.deepEqual(
      problemsOf((v) => (v.openbaoToken = "FAKE-SECRET-token"), new Set(["grafanaAuth"])),
      [
        "openbaoToken: is a credential in plain text (value not shown). Run `pulumi config set --secret openbaoToken --stack staging --cwd app` and enter it when asked, or leave it out for the CLI to supply (docs/credentials.md)",
      ],
    );
  });

  it("refuses an OpenBao address or a data source URL with a credential inside", () => {
    assert.deepEqual(
      problemsOf((v) => {
        v.openbao.address = "https://openbao.staging.example.net/?token=FAKE-SECRET";
        v.grafana.dataSources[0].url = "http://admin:FAKE-SECRET@prometheus.monitoring.svc:9090";
      }),
      [
        'openbao.address: carries a credential (a token parameter), which would be stored in plain text; got "https://openbao.staging.example.net/?token=***". Give the bare URL; the token is the openbaoToken secret (docs/credentials.md)',
        'grafana.dataSources[0].url: carries a credential (a user:password), which would be stored in plain text; got "http://***:***@prometheus.monitoring.svc:9090". Give the bare URL and let the data source authenticate another way',
      ],
    );
  });

  // A stack file that breaks a rule, the exact problems, and a valid neighbour.
  const cases: {
    rule: string;
    broken: (v: any) => void;
    problems: string[];
    valid?: (v: any) => void;
  }[] = [
    {
      rule: "two OpenBao roles of one name",
      broken: (v) => v.openbao.roles.push({ ...v.openbao.roles[0], namespaces: ["other"] }),
      problems: [
        'openbao.roles[1].name: repeats openbao.roles[0].name; got "external-secrets". Each role needs its own name; merge their service accounts, namespaces and policies into one role, or rename one',
      ],
      valid: (v) =>
        v.openbao.roles.push({ ...v.openbao.roles[0], name: "other", namespaces: ["other"] }),
    },
    // OpenBao paths: CI's own JWT auth method, OpenBao's own paths, one name for both.
    ...(["kubernetesAuthPath", "kvMount"] as const).flatMap((key) => {
      const what = key === "kvMount" ? "the KV mount" : "the Kubernetes auth method";
      const fallback = key === "kvMount" ? "secret" : "kubernetes";
      return [
        {
          rule: `openbao.${key} on CI's own JWT auth method`,
          broken: (v: any) => (v.openbao[key] = "jwt-github"),
          problems: [
            `openbao.${key}: is CI's own JWT auth method (auth/jwt-github), whose roles decide what CI may do; got "jwt-github". Give ${what} a path of its own, e.g. ${fallback} (the default)`,
          ],
          valid: (v: any) => (v.openbao[key] = "jwt-apps"),
        },
        ...["sys", "auth", "audit", "token", "identity", "cubbyhole"].map((path) => ({
          rule: `openbao.${key} on OpenBao's own path ${path}`,
          broken: (v: any) => (v.openbao[key] = path),
          problems: [
            `openbao.${key}: is one of OpenBao's own paths (sys, auth, audit, token, identity, cubbyhole); got "${path}". Give ${what} a path of its own, e.g. ${fallback} (the default)`,
          ],
          valid: (v: any) => (v.openbao[key] = `${path}-apps`),
        })),
      ];
    }),
    {
      rule: "one name for the KV mount and the Kubernetes auth method",
      broken: (v) => (v.openbao.kvMount = "kubernetes"),
      problems: [
        'openbao.kvMount: is also openbao.kubernetesAuthPath; got "kubernetes". Give the Kubernetes auth method and the KV mount a name each',
      ],
      valid: (v) => (v.openbao.kvMount = "kubernetes-kv"),
    },
    {
      rule: "a Kubernetes auth path equal to the KV mount's default",
      broken: (v) => {
        delete v.openbao.kvMount;
        v.openbao.kubernetesAuthPath = "secret";
      },
      problems: [
        'openbao.kubernetesAuthPath: is also openbao.kvMount (its default); got "secret". Give the Kubernetes auth method and the KV mount a name each',
      ],
      valid: (v) => delete v.openbao.kvMount,
    },
    {
      rule: "both OpenBao paths wrong at once, each named",
      broken: (v) => {
        v.openbao.kubernetesAuthPath = "jwt-github";
        v.openbao.kvMount = "sys";
      },
      problems: [
        'openbao.kubernetesAuthPath: is CI\'s own JWT auth method (auth/jwt-github), whose roles decide what CI may do; got "jwt-github". Give the Kubernetes auth method a path of its own, e.g. kubernetes (the default)',
        'openbao.kvMount: is one of OpenBao\'s own paths (sys, auth, audit, token, identity, cubbyhole); got "sys". Give the KV mount a path of its own, e.g. secret (the default)',
      ],
    },
  ];
  for (const c of cases) {
    it(`refuses ${c.rule}`, () => assert.deepEqual(problemsOf(c.broken), c.problems));
    const valid = c.valid;
    if (valid) {
      it(`accepts the valid neighbour of ${c.rule}`, () => assert.deepEqual(problemsOf(valid), []));
    }
  }

  it("answers an unknown top-level app key with the one probably meant", () => {
    assert.deepEqual(
      problemsOf((v) => {
        v.grafna = v.grafana;
        delete v.grafana;
      }),
      ["talos-platform-app:grafna: unknown key. Did you mean talos-platform-app:grafana?"],
    );
  });

  it("answers a misspelt app setting with the setting meant, a swapped pair of letters included", () => {
    assert.deepEqual(
      problemsOf((v) => {
        v.openbao.kvmount = v.openbao.kvMount;
        delete v.openbao.kvMount;
        v.grafana.folders[0].titel = v.grafana.folders[0].title;
        delete v.grafana.folders[0].title;
      }),
      [
        "openbao.kvmount: unknown key. Did you mean kvMount?",
        "grafana.folders[0].title: required",
        "grafana.folders[0].titel: unknown key. Did you mean title?",
      ],
    );
  });

  it("names a bad inline policy name without echoing the policy", () => {
    assert.deepEqual(
      problemsOf(
        (v) => (v.openbao.policies = { Bad_Name: 'path "secret/*" { capabilities = ["read"] }' }),
      ),
      [
        "openbao.policies.Bad_Name: not a valid key here: expected a lowercase name (letters, digits, - and _)",
      ],
    );
  });

  it("runs the file and policy checks after a schema error too", () => {
    assert.deepEqual(
      problemsOf((v) => {
        v.openbao.kvMount = "Secret Store";
        v.openbao.policyDir = "../test/fixtures/app/bad-policies";
        v.grafana.folders[0].dashboards = ["platform/gone.json"];
      }),
      [
        'openbao.kvMount: expected a lowercase name (letters, digits, - and _); got "Secret Store"',
        'test/fixtures/app/bad-policies/broken.hcl: not an OpenBao policy: no path "…" { capabilities = […] } block',
        "test/fixtures/app/bad-policies/unclosed.hcl: has a { that is never closed",
        // CI's two policies are generated from the stack, so they are always known.
        "openbao.roles[0].policies[0]: policy external-secrets is neither in the policy folder nor in openbao.policies. Known: ci-apply, ci-preview, default",
        "grafana.folders[0].dashboards[0]: dashboard file app/dashboards/platform/gone.json does not exist. Export the dashboard's JSON model there, or drop it from the list",
      ],
    );
  });

  it("accepts the repository's stack files", () => {
    assert.deepEqual(
      problemsOf(() => undefined),
      [],
    );
  });

  it("names each bad policy file", () => {
    assert.deepEqual(
      problemsOf((v) => (v.openbao.policyDir = "../test/fixtures/app/bad-policies")),
      [
        'test/fixtures/app/bad-policies/broken.hcl: not an OpenBao policy: no path "…" { capabilities = […] } block',
        "test/fixtures/app/bad-policies/unclosed.hcl: has a { that is never closed",
        "openbao.roles[0].policies[0]: policy external-secrets is neither in the policy folder nor in openbao.policies. Known: ci-apply, ci-preview, default",
      ],
    );
  });

  it("names a missing dashboard file and one that is not JSON", () => {
    const problems = problemsOf(
      (v) =>
        (v.grafana.folders[0].dashboards = [
          "platform/gone.json",
          "../../test/fixtures/app/not-json.json",
        ]),
    );
    assert.equal(problems.length, 2);
    assert.equal(
      problems[0],
      "grafana.folders[0].dashboards[0]: dashboard file app/dashboards/platform/gone.json does not exist. Export the dashboard's JSON model there, or drop it from the list",
    );
    // The parser's wording varies between Node releases; the file and the verdict do not.
    assert.match(problems[1], /^test\/fixtures\/app\/not-json\.json: not valid JSON \(.+\)$/);
  });

  it("requires a way to log in and Grafana's token, as secrets", () => {
    assert.deepEqual(
      problemsOf(() => undefined, new Set()),
      [
        "openbaoToken: required (or openbaoJwt in CI), as a secret. The CLI takes it from OPENBAO_TOKEN, or CI from its OIDC token (docs/app-layer.md)",
        "grafanaAuth: required when grafana is set, as a secret. A service-account token; the CLI takes it from GRAFANA_AUTH",
      ],
    );
  });

  it("refuses a policy file in place of a generated CI policy, and unknown placeholders", () => {
    assert.deepEqual(
      problemsOf((v) => {
        v.openbao.policies = {
          "ci-apply": 'path "sys/*" { capabilities = ["sudo"] }',
          typo: 'path "${kvMonut}/data/*" { capabilities = ["read"] }',
        };
      }),
      [
        "openbao.policies.ci-apply: ci-apply is generated from the stack (exactly what CI's runs need); remove it",
        "openbao.policies.typo: unknown placeholder ${kvMonut}; known: ${kvMount}, ${kubernetesAuthPath}",
      ],
    );
  });

  it("rejects a role naming a policy that does not exist", () => {
    assert.deepEqual(
      problemsOf((v) => v.openbao.roles[0].policies.push("nope")),
      [
        "openbao.roles[0].policies[1]: policy nope is neither in the policy folder nor in openbao.policies. Known: ci-apply, ci-preview, default, external-secrets",
      ],
    );
  });
});
