/** Off Linux x86-64 the bundled helm cannot run: the chart tests say so at once instead of failing one by one. */
describe('the chart tests off Linux x86-64', () => {
  const real = { platform: process.platform, arch: process.arch };
  afterEach(() => {
    Object.defineProperty(process, 'platform', { value: real.platform });
    Object.defineProperty(process, 'arch', { value: real.arch });
  });

  it.each([
    ['darwin', 'arm64'],
    ['linux', 'arm64'],
    ['win32', 'x64'],
  ])(
    'When they run on %s/%s, then loading the helm support fails naming the platform and what to do',
    async (platform, arch) => {
      Object.defineProperty(process, 'platform', { value: platform });
      Object.defineProperty(process, 'arch', { value: arch });
      await jest.isolateModulesAsync(async () => {
        await expect(import('./helm')).rejects.toThrow(
          `built for linux/x64 only; this machine is ${platform}/${arch}: run them on Linux x86-64`,
        );
      });
    },
  );
});
