import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

/**
 * Developers' machines and CI run Node 20 (package.json `engines`); `npm install` warns
 * (EBADENGINE) about every installed package whose own `engines.node` excludes the running
 * Node. The lockfile records each package's `engines`, so this catches an upgrade that
 * brings such a package in before anyone installs it.
 */
const root = resolve(import.meta.dirname, '../..');
const manifest = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(resolve(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};

/** Installed packages (not the project itself) and the Node range each declares. */
const declared = Object.entries(lock.packages)
  .filter(([path]) => path !== '')
  .flatMap(([path, entry]) => {
    const node = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    return node ? [{ name: path.replace(/^.*node_modules\//, ''), path, version: entry.version, node }] : [];
  });

describe('installed packages run on the Node this project is developed with', () => {
  it('the lockfile records engines at all', () => {
    expect(declared.length).toBeGreaterThan(50);
  });

  it(`every package admits the Node 20 line of package.json's engines (${manifest.engines.node})`, () => {
    const projectMajor = semver.minVersion(manifest.engines.node)!.major;
    const nodeLine = `>=${semver.minVersion(manifest.engines.node)!.version} <${projectMajor + 1}.0.0`;
    const excluding = declared.filter((p) => !semver.intersects(p.node, nodeLine, { includePrerelease: false }));
    expect(excluding.map((p) => `${p.path}@${p.version} wants node ${p.node}`)).toEqual([]);
  });

  it(`every package admits the running Node (${process.version}), so npm install prints no EBADENGINE`, () => {
    const excluding = declared.filter((p) => !semver.satisfies(process.version, p.node, { includePrerelease: true }));
    expect(excluding.map((p) => `${p.path}@${p.version} wants node ${p.node}`)).toEqual([]);
  });
});
