package redis

// Node ids and a real CLUSTER NODES reply shared by the tests.

const (
	idA = "099acb3ad33355bfc624e555c95f92f2c4c98dbe"
	idB = "a5d1837466ddee36fb8f66a06a54c9d80ece254f"
	idC = "a3a44f32f965c0b821ece5fb05e48e6695547d1c"
	idD = "c096849e540e19e62780faa5bf76a837fe1752f6"
	idE = "40b05f86ee6521480c7d10fefca3163a70a1e6c3"
	idF = "cc660dd30cdd54844f77e2d0729abf88c029c93b"
)

// labClusterNodes is a real reply of a 3+3 lab cluster (Redis 7.0), seen from
// the node on port 17100 while it migrates slot 100.
const labClusterNodes = idD + ` 127.0.0.1:17103@27103 slave ` + idA + ` 0 1795986153169 1 connected
` + idB + ` 127.0.0.1:17101@27101 master - 0 1795986153169 2 connected 5461-10922
` + idF + ` 127.0.0.1:17105@27105 slave ` + idC + ` 0 1795986153068 3 connected
` + idC + ` 127.0.0.1:17102@27102 master - 0 1795986153068 3 connected 10923-16383
` + idE + ` 127.0.0.1:17104@27104 slave ` + idB + ` 0 1795986153068 2 connected
` + idA + ` 127.0.0.1:17100@27100 myself,master - 0 1795986152000 1 connected 0-5460 [100->-` + idB + `]
`
