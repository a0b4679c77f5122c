import { interestTerms } from './keyword-seeder.js';

describe('interestTerms', () => {
  it('turns the persona\u2019s described interests into keywords', () => {
    const terms = interestTerms([
      '猫（尤其是楼下的橘猫芋圆）',
      '做饭和探店，最近在研究宿舍小锅能煮什么',
      '校园电台和播客',
    ]);
    expect(terms).toEqual(expect.arrayContaining(['猫', '探店', '宿舍', '小锅', '电台', '播客']));
    expect(terms).not.toContain('猫（尤其是楼下的橘猫芋圆）');
    expect(terms).not.toContain('做饭和探店');
  });
});
