/** The part of jstat (no types of its own) the bench uses. */
declare module 'jstat' {
  const jstat: {
    readonly jStat: {
      readonly studentt: {
        /** The p-quantile of Student's t with `dof` degrees of freedom. */
        inv(p: number, dof: number): number;
      };
    };
  };
  export default jstat;
}
