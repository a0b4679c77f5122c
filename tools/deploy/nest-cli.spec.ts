import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');

interface NestProject {
  type: 'application' | 'library';
  root: string;
  sourceRoot: string;
  entryFile: string;
}

const cli = JSON.parse(readFileSync(join(ROOT, 'nest-cli.json'), 'utf8')) as {
  monorepo: boolean;
  projects: Record<string, NestProject>;
};

describe('nest-cli.json describes the monorepo as it is', () => {
  it('is in monorepo mode', () => {
    expect(cli.monorepo).toBe(true);
  });

  it.each([
    ['apps', 'application'],
    ['libs', 'library'],
  ] as const)('has one %s project per folder, with an entry file that exists', (folder, type) => {
    const folders = readdirSync(join(ROOT, folder)).sort();
    const projects = Object.entries(cli.projects)
      .filter(([, project]) => project.type === type)
      .map(([name]) => name)
      .sort();
    expect(projects).toEqual(folders);
    for (const name of folders) {
      const project = cli.projects[name]!;
      expect(project.sourceRoot).toBe(`${folder}/${name}/src`);
      expect(existsSync(join(ROOT, project.sourceRoot, `${project.entryFile}.ts`))).toBe(true);
    }
  });
});
