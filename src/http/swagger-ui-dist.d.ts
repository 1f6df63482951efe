/** swagger-ui-dist ships no types; this is the one function the reference page uses of it. */
declare module 'swagger-ui-dist/absolute-path.js' {
  /** The folder of swagger-ui-dist's files. */
  const getAbsoluteFSPath: () => string;
  export default getAbsoluteFSPath;
}
