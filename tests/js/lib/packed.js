// The package as users get it: `npm pack` of this repository, installed into a
// fresh project. The project's lockfile pins the tarball and, from this
// repository's lockfile, the tarball's dependencies (their versions and
// integrity), so `npm ci --offline` installs them from the npm cache that this
// repository's own `npm ci` filled: no registry metadata is needed, whatever
// else the cache holds.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../../..", import.meta.url));

/** Runs `cmd args` in `cwd`; its stdout, or an assertion naming the command and its output. */
export function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, npm_config_update_notifier: "false" },
  });
  assert.equal(
    r.status,
    0,
    `${cmd} ${args.join(" ")} failed (${r.status}):\n${r.stdout}\n${r.stderr}`,
  );
  return r.stdout;
}

/** The lockfile entries of `deps` and of everything they depend on, from this repository's lockfile. */
function lockedDependencies(deps) {
  const locked = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")).packages;
  const entries = {};
  const todo = Object.keys(deps);
  while (todo.length) {
    const name = todo.pop();
    const key = `node_modules/${name}`;
    if (entries[key]) continue;
    const e = locked[key];
    assert.ok(e, `${name}, a dependency of the package, is in package-lock.json`);
    const file = `${name.split("/").pop()}-${e.version}.tgz`;
    entries[key] = {
      version: e.version,
      resolved: e.resolved ?? `https://registry.npmjs.org/${name}/-/${file}`,
      integrity: e.integrity,
      ...(e.dependencies && { dependencies: e.dependencies }),
    };
    todo.push(...Object.keys(e.dependencies ?? {}));
  }
  return entries;
}

/**
 * Packs this repository into a new temp folder (its name starts with `prefix`)
 * and installs the tarball into a project there (`app`, an ES
 * module package): {tmp, app, tarball, files} (files: the tarball's paths).
 */
export function installPacked(prefix) {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  const [packed] = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", tmp], root));
  const app = join(tmp, "app");
  mkdirSync(app);
  const own = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const spec = `file:../${packed.filename}`;
  const pkg = { name: "app", version: "1.0.0", private: true, type: "module" };
  const lock = {
    name: pkg.name,
    version: pkg.version,
    lockfileVersion: 3,
    requires: true,
    packages: {
      "": { name: pkg.name, version: pkg.version, dependencies: { attnkit: spec } },
      "node_modules/attnkit": {
        version: own.version,
        resolved: spec,
        ...(own.dependencies && { dependencies: own.dependencies }),
      },
      ...lockedDependencies(own.dependencies ?? {}),
    },
  };
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ ...pkg, dependencies: { attnkit: spec } }, null, 2),
  );
  writeFileSync(join(app, "package-lock.json"), JSON.stringify(lock, null, 2));
  run("npm", ["ci", "--offline", "--no-audit", "--no-fund"], app);
  return { tmp, app, tarball: join(tmp, packed.filename), files: packed.files.map((f) => f.path) };
}
