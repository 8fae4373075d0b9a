import { defineConfig } from 'vite';

// The console is built into web/static, which the Go binary embeds
// (web/doc.go); web/build.sh runs this and records the sources' hash.
export default defineConfig({
  base: '/',
  build: {
    outDir: '../static',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    chunkSizeWarningLimit: 2000,
  },
});
