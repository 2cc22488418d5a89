// Preloaded into a child gateway (NODE_OPTIONS=--import) by last-resort.test.ts: on SIGUSR2,
// a stray timer throws and a promise is rejected with nobody listening, as a bug would.
process.on('SIGUSR2', () => {
  setTimeout(() => {
    throw new Error('stray timer failure');
  }, 0);
  Promise.reject(new Error('stray rejection'));
});
