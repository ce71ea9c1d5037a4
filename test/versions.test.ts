import { strict as assert } from "node:assert";
import {
  parseVersion,
  supportsKubernetes,
  talosRelease,
  TALOS_RELEASES,
  talosTag,
} from "../components/talos/versions";

describe("Talos version rules", () => {
  it("parses versions with or without v and rejects partial ones", () => {
    assert.equal(parseVersion("v1.13.9")!.version, "1.13.9");
    assert.equal(parseVersion("1.36.3")!.version, "1.36.3");
    for (const bad of ["1.13", "v1.13.9-beta.0", "latest", "v1.13.x"])
      assert.equal(parseVersion(bad), undefined, bad);
  });

  it("knows each release line's Kubernetes range", () => {
    const cases: [string, string, boolean][] = [
      ["v1.13.9", "1.31.0", true],
      ["v1.13.9", "1.36.3", true],
      ["v1.13.9", "1.30.9", false],
      ["v1.13.9", "1.37.0", false],
      ["v1.14.0", "1.37.1", true],
      ["v1.10.0", "1.28.0", true],
    ];
    for (const [talos, kubernetes, expected] of cases) {
      assert.equal(
        supportsKubernetes(talosRelease(parseVersion(talos)!)!, parseVersion(kubernetes)!),
        expected,
        `${talos} / ${kubernetes}`,
      );
    }
  });

  it("lists release lines oldest first, each supporting six Kubernetes minors", () => {
    const minors = TALOS_RELEASES.map((r) => Number(r.minor.split(".")[1]));
    assert.deepEqual(
      minors,
      [...minors].sort((a, b) => a - b),
    );
    for (const release of TALOS_RELEASES) {
      assert.equal(
        Number(release.kubernetes.max.split(".")[1]) - Number(release.kubernetes.min.split(".")[1]),
        5,
      );
    }
    assert.equal(talosRelease(parseVersion("v1.9.5")!), undefined);
    assert.equal(talosTag(parseVersion("1.13.9")!), "v1.13.9");
  });
});
