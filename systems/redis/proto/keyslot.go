package redisproto

import "strings"

// SlotCount is the number of hash slots in a Redis Cluster.
const SlotCount = 16384

// KeySlot returns the hash slot of key as Redis Cluster computes it:
// CRC16/XMODEM of the key modulo 16384, where only the part between the
// first "{" and the next "}" is hashed if that part is not empty.
func KeySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if length := strings.IndexByte(key[open+1:], '}'); length > 0 {
			key = key[open+1 : open+1+length]
		}
	}
	return int(crc16(key) & (SlotCount - 1))
}

// crc16Table is the CRC16/XMODEM table (polynomial 0x1021, initial value 0).
var crc16Table = func() (table [256]uint16) {
	for i := range table {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		table[i] = crc
	}
	return table
}()

func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}
