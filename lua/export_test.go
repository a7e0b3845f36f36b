package lua

// Code is code, for the tests of package lua_test: Lua text without its
// comments.
var Code = code
