// 把日期格式化为“年-月-日”形式的字符串，月份和日期不足两位时在前面补零
export function formatDate(date) {
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}
